package strict

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bom is the UTF-8 byte order mark that some editors write first.
var bom = []byte("\xef\xbb\xbf")

// TrimBOM returns data without a leading UTF-8 byte order mark. Decode
// skips one (docs/policy.md): JSON and YAML both allow a reader to, and
// it says nothing about the content.
func TrimBOM(data []byte) []byte { return bytes.TrimPrefix(data, bom) }

// checkText refuses bytes that no policy or plan needs and that would
// read differently from how they look: invalid UTF-8 (which JSON decoding
// would silently turn into U+FFFD), and raw control characters other than
// tab, line feed and carriage return (C0, DEL and C1). Each is an error
// at its line and column; inside a JSON string a control character can
// still be written as an escape, and the validators then judge the value.
func checkText(data []byte, what string) error {
	line, lineStart := 1, 0
	for i := 0; i < len(data); {
		c := data[i]
		if c == '\n' {
			line, lineStart = line+1, i+1
			i++
			continue
		}
		if c < utf8.RuneSelf && c >= 0x20 && c != 0x7f || c == '\t' || c == '\r' {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		at := pos{line, i - lineStart + 1}
		switch {
		case r == utf8.RuneError && size <= 1:
			hint := "save the file as UTF-8"
			if i == 0 && (bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe})) {
				hint = "the file starts with a UTF-16 byte order mark: save it as UTF-8"
			}
			return errorAt(at, fmt.Sprintf("invalid UTF-8 (byte 0x%02x): a %s is UTF-8 text", c, what), hint)
		case unicode.IsControl(r):
			return errorAt(at, fmt.Sprintf("control character %U in the %s", r, what),
				"remove it; in a JSON string write it as an escape if it is meant")
		}
		i += size
	}
	return nil
}

// Name reports whether s can name a tool, a task or a rule: non-empty
// valid UTF-8 with no white space, no control and no format characters
// (the invisible and bidirectional ones), since names appear in reasons,
// on terminals and in the audit stream, and must read as what they are.
func Name(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}) < 0
}
