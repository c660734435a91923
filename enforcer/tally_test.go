package enforcer

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscapeLine(t *testing.T) {
	for in, want := range map[string]string{
		`host "pypi.org:443" denied by default`: `host "pypi.org:443" denied by default`,
		"evil\x1b[2J\x1b]0;pwned\x07":           `evil\x1b[2J\x1b]0;pwned\x07`,
		"two\nlines\r":                          `two\x0alines\x0d`,
		"para\u2028sep\u202eRLO":                `para\u2028sep\u202eRLO`,
		"bad\xffbyte":                           `bad\xffbyte`,
		"caf\u00e9 \u00a0":                      "caf\u00e9 \\xa0",
	} {
		if got := escapeLine(in); got != want {
			t.Errorf("escapeLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEscapeLine: whatever the sandbox makes a reason say, the line is
// valid UTF-8 with nothing but printable runes.
func FuzzEscapeLine(f *testing.F) {
	f.Add("plain")
	f.Add("\x1b[31mred\n\xff\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		out := escapeLine(s)
		if !utf8.ValidString(out) {
			t.Fatalf("escapeLine(%q) = %q: invalid UTF-8", s, out)
		}
		if i := strings.IndexFunc(out, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
			t.Fatalf("escapeLine(%q) = %q: non-printing rune at %d", s, out, i)
		}
	})
}
