package changes

import (
	"bytes"
	"testing"
)

// TestEncode85 checks git's base85 against what git writes: the literal
// hunk of an empty file, "HcmV?d00001", is zlib's 78 01 03 00 00 00 00 01
// (git deflates at level 1), and a short group is padded with zeros.
func TestEncode85(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte{0x78, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}, "cmV?d00001"},
		{[]byte{0, 0, 0, 0}, "00000"},
		{[]byte{0xff, 0xff, 0xff, 0xff}, "|NsC0"},
		{[]byte{0xff}, encodeOne(0xff000000)},
		{[]byte{1, 2, 3, 4, 5}, encodeOne(0x01020304) + encodeOne(0x05000000)},
	} {
		var b bytes.Buffer
		encode85(&b, tc.in)
		if b.String() != tc.want {
			t.Errorf("encode85(% x) = %q, want %q", tc.in, b.String(), tc.want)
		}
	}
}

// encodeOne is the base85 of one 32-bit group, computed the long way.
func encodeOne(v uint32) string {
	out := make([]byte, 5)
	for i := 4; i >= 0; i-- {
		out[i] = base85[v%85]
		v /= 85
	}
	return string(out)
}

func TestQuotePath(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path.go":    "plain/path.go",
		"sp ace":           "sp ace",
		"q\"uote":          `"q\"uote"`,
		"back\\slash":      `"back\\slash"`,
		"\a\b\t\n\v\f\r":   `"\a\b\t\n\v\f\r"`,
		"\x00\x01\x1b\x7f": `"\000\001\033\177"`,
		"caf\u00e9":        `"caf\303\251"`,
		"\xff":             `"\377"`,
	} {
		if got := QuotePath(in); got != want {
			t.Errorf("QuotePath(%q) = %s, want %s", in, got, want)
		}
	}
	if got := quotePrefixed("a/", "x\"y", false); got != `"a/x\"y"` {
		t.Errorf("quotePrefixed = %s", got)
	}
}
