package mcpserver

import (
	"regexp"
	"strings"
	"testing"
)

// toolNameForm is SEP-986's tool-name form as a regexp: the reference
// validToolName is checked against.
var toolNameForm = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// FuzzValidToolName: validToolName accepts exactly the names of the form.
func FuzzValidToolName(f *testing.F) {
	for _, s := range []string{"", "a", "run_tests", "a.b-c_D9", "a b", "é", "a\x00", "a/b", "a\n",
		strings.Repeat("x", 128), strings.Repeat("x", 129), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validToolName(s), toolNameForm.MatchString(s); got != want {
			t.Fatalf("validToolName(%q) = %v, the form says %v", s, got, want)
		}
	})
}
