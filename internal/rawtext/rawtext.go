// Package rawtext carries strings through JSON byte for byte. JSON
// strings are Unicode text: encoding/json writes U+FFFD for every byte
// that is not valid UTF-8, and its reader cannot tell that from a real
// U+FFFD, so a path, an argument or a file name that an agent or a
// sandbox chose would arrive as another one. A String that is valid
// UTF-8 is a plain JSON string, exactly as encoding/json writes it; any
// other is the object {"base64":"…"} holding its bytes in standard,
// padded base64 (the audit stream's form, docs/audit.md "Strings"). A
// JSON string never decodes to that object's bytes, nor it to anything
// else.
package rawtext

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// String is a string that JSON carries byte for byte.
type String string

// rawBytes is the form of a String that is not valid UTF-8.
type rawBytes struct {
	Base64 string `json:"base64"`
}

// MarshalJSON writes s as a JSON string or, when it is not valid UTF-8,
// as {"base64":"…"}.
func (s String) MarshalJSON() ([]byte, error) {
	return appendJSON(nil, string(s))
}

func appendJSON(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		raw, err := json.Marshal(rawBytes{base64.StdEncoding.EncodeToString([]byte(s))})
		return append(b, raw...), err
	}
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"'), nil
	}
	q, err := json.Marshal(s)
	return append(b, q...), err
}

// plain reports whether encoding/json writes the valid UTF-8 string s
// between quotes unchanged: no quote, backslash, control character,
// HTML-sensitive character or U+2028/U+2029 (whose UTF-8 starts 0xe2).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&', c == 0xe2:
			return false
		}
	}
	return true
}

// ErrNotText is the error for a member that is neither a JSON string nor
// a {"base64":"…"} object.
var ErrNotText = errors.New(`a string member is neither a JSON string nor {"base64":"…"}`)

// UnmarshalJSON reads either form that MarshalJSON writes; null leaves s
// as it is, as encoding/json does for a string.
func (s *String) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0:
		*s = String(b[1 : len(b)-1]) // nothing escaped: the bytes are the string
		return nil
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = String(v)
		return nil
	case len(b) > 0 && b[0] == '{':
		var r struct {
			Base64 *string `json:"base64"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.Base64 == nil {
			return ErrNotText
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(*r.Base64)
		if err != nil {
			return ErrNotText
		}
		*s = String(raw)
		return nil
	case string(b) == "null":
		return nil
	}
	return ErrNotText
}

// Strings is a list of strings that JSON carries byte for byte, each as
// a String; nil is null.
type Strings []string

// MarshalJSON writes l as a JSON array of Strings, or null when nil.
func (l Strings) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("null"), nil
	}
	b := []byte{'['}
	var err error
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSON(b, s); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Strings) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = nil
		return nil
	}
	var ss []String
	if err := json.Unmarshal(b, &ss); err != nil {
		return err
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	*l = out
	return nil
}
