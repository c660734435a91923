package termtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON encodes v as a json.Encoder does (HTML characters left as they
// are, indented by indent unless it is ""), followed by a new line, and
// then writes every character that does not print as a JSON \u escape
// (a surrogate pair beyond U+FFFF): DEL, the C1 controls, bidirectional,
// zero-width and tag characters, which encoding/json leaves raw. The
// C0 controls are escaped by the encoder itself. The result is the same
// JSON value, read by any JSON parser, and holds nothing a terminal
// interprets: no Writer would change a byte of it.
func JSON(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return escapeJSON(b.Bytes()), nil
}

// WriteJSON writes JSON(v, indent) to w. When w is a Writer it writes to
// the stream under it, after what the Writer kept back: the Writer's Go
// escapes (\x7f, \U000e0041) are not JSON, and JSON needs none of them.
// Every JSON document airlock prints goes through WriteJSON.
func WriteJSON(w io.Writer, v any, indent string) error {
	b, err := JSON(v, indent)
	if err != nil {
		return err
	}
	if t, ok := w.(*Writer); ok {
		if err := t.Flush(); err != nil {
			return err
		}
		w = t.W
	}
	_, err = w.Write(b)
	return err
}

// escapeJSON writes every character of the encoder's output b that does
// not print as a \u escape. The output is valid UTF-8 whose every byte
// from 0x7f up is inside a string (JSON's syntax is ASCII), where the
// escape stands for the same character.
func escapeJSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < 0x7f {
		i++
	}
	if i == len(b) {
		return b
	}
	out := append(make([]byte, 0, len(b)+16), b[:i]...)
	for i < len(b) {
		if b[i] < 0x7f {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r > 0xffff && !unicode.IsPrint(r):
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		case !unicode.IsPrint(r) || r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\u%04x`, r) // RuneError: encoding/json writes U+FFFD for a bad byte
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
