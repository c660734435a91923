package termtext

import (
	"bytes"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, ünïcode", "plain text, ünïcode"},
		{"\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"csi \x9b2J", `csi \x9b2J`},   // the 8-bit CSI, as a raw byte
		{"c1 \u009b2J", `c1 \u009b2J`}, // and as a character
		{"a\nb\tc\rd", `a\nb\tc\rd`},   // one line
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"del \x7f", `del \x7f`},
		{"bad \xff\xfe", `bad \xff\xfe`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Clip("abcdef", 3); got != "abc…" {
		t.Errorf("Clip = %q", got)
	}
	if got := Clip("a\x1bc", 2); got != `a\x1b…` {
		t.Errorf("Clip = %q", got)
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	in := "airlock: line one \x1b[31m\n\thint: two \x9b\xff\n"
	if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if want := "airlock: line one \\x1b[31m\n\thint: two \\x9b\\xff\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
	// A character cut between two writes arrives whole; a lone start of
	// one is escaped at the flush.
	b.Reset()
	for _, p := range []string{"caf\xc3", "\xa9 \xe2\x80", "\xae \xf0"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := `café \u202e \xf0`; b.String() != want {
		t.Errorf("pieces wrote %q, want %q", b.String(), want)
	}
	if Raw(w) != &b || Raw(&b) != &b {
		t.Error("Raw does not unwrap")
	}
}

// FuzzEscape: nothing that Escape or a Writer lets through can drive a
// terminal.
func FuzzEscape(f *testing.F) {
	f.Add("\x1b]0;pwned\a\x9b\xc2\x9b\u202e\n\t", 9)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		assertSafe(t, Escape(s), false)
		var b bytes.Buffer
		w := NewWriter(&b)
		cut = min(max(cut, 0), len(s))
		for _, p := range []string{s[:cut], s[cut:]} {
			if _, err := w.Write([]byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		assertSafe(t, b.String(), true)
		if utf8.ValidString(s) && plain(s, true) && b.String() != s {
			t.Fatalf("plain text changed: %q became %q", s, b.String())
		}
	})
}

func assertSafe(t *testing.T, s string, lines bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("invalid UTF-8 let through: %q", s)
	}
	for _, r := range s {
		if lines && (r == '\n' || r == '\t') {
			continue
		}
		if !unicode.IsPrint(r) {
			t.Fatalf("%U let through: %q", r, s)
		}
	}
}
