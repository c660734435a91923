package hostpath

import (
	"strings"
	"testing"
)

// TestWords checks the rules on a path's words alone, with each refusal's
// fixed wording.
func TestWords(t *testing.T) {
	for _, tc := range []struct {
		p    string
		view bool
		want string // "" when allowed
	}{
		{"/usr", true, ""},
		{"/home/alice/project", true, ""},
		{"/var/tmp/x", true, ""},
		{"/tmp/x", false, ""},
		{"relative", true, "want a clean absolute path"},
		{"/usr/../run", true, "want a clean absolute path"},
		{"/usr/", true, "want a clean absolute path"},
		{"/run", true, whyTree},
		{"/run/lock", true, whyTree},
		{"/var/run/docker.sock", false, whyTree},
		{"/proc/1", false, whyTree},
		{"/sys", true, whyTree},
		{"/dev/shm", true, whyTree},
		{"/", true, whyExact},
		{"/home", true, whyExact},
		{"/root", true, whyExact},
		{"/var", true, whyExact},
		{"/boot", true, whyExact},
		{"/Users", true, whyExact},
		{"/Users/dev/project", true, ""},
		{"/private", true, whyExact},
		{"/private/var", true, whyExact},
		{"/private/tmp", true, whyExact},
		{"/private/etc", true, ""},
		{"/Volumes", true, whyExact},
		{"/home", false, ""},
		{"/tmp", true, whyExact},
		{"/tmp/x", true, "the sandbox makes this directory itself"},
		{"/workspace/a", true, "the sandbox makes this directory itself"},
		{"/.airlock", true, "the sandbox makes this directory itself"},
		{"/runner", true, ""},
		{"/proc2", true, ""},
	} {
		err := checkWords("readOnly", tc.p, tc.view)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q (view %v): %v, want allowed", tc.p, tc.view, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q (view %v): %v, want %q", tc.p, tc.view, err, tc.want)
		}
	}
}
