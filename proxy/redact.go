package proxy

import (
	"encoding/base64"
	"encoding/hex"
	"html"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A destination that reflects what it receives (a debugging endpoint, an
// error page, a request dump) may hand a credential's value back, and so
// may an error of the transport that quotes its answer. The redactor is
// the one search for the value: every answer from a credential's host
// passes it on its way to the sandbox (echo.go), and every string the
// proxy reports passes it on its way to a record (credential.go).
//
// What it finds (docs/egress.md, "Credentials"): the text forms of the
// value (the header's whole value, the token after its scheme, for Basic
// the decoded "user:secret" and the secret), each also in base64 (either
// alphabet, any alignment, padded or not) and in hex; each of their
// bytes written as itself in either case or as a character escape a
// client decodes: JSON's and JavaScript's (\/, \", \uXXXX with surrogate
// pairs, \xXX), percent-encoding (and + for a space), an HTML or XML
// character reference ending in ";", in any mix. By hand: no library
// searches a stream for text under its escapes.

// minForm is the shortest form searched for, the value itself aside:
// shorter ones (a Basic user name's like) are not secret and would
// garble answers.
const minForm = 8

// maxRef is the longest character reference read ("&#x0000002F;").
const maxRef = 32

// form is one spelling of a credential's value, in lower case, and what
// replaces it.
type form struct {
	text []byte
	repl []byte
}

// redactor replaces the forms of one or more credentials' values.
type redactor struct {
	forms   []form
	byFirst [256][]uint16   // the forms whose first byte is the index, in either case
	starts  [256]bool       // the bytes a form, or an escape, may begin with
	pairs   [1 << 10]uint64 // a bit per two bytes a form, or an escape, may begin with
}

// mayBegin reports whether a form may begin with c then d (a quick
// test: at does the work).
func (r *redactor) mayBegin(c, d byte) bool {
	k := int(c)<<8 | int(d)
	return r.pairs[k>>6]&(1<<(k&63)) != 0
}

func (r *redactor) setPair(c, d byte) {
	k := int(c)<<8 | int(d)
	r.pairs[k>>6] |= 1 << (k & 63)
}

// newRedactor returns the redactor of cs's values.
func newRedactor(cs ...*Credential) *redactor {
	r := &redactor{}
	for _, c := range cs {
		repl := []byte("[credential " + c.Name + " redacted]")
		for _, f := range formsOf(c.Value) {
			r.forms = append(r.forms, form{text: []byte(strings.ToLower(f)), repl: repl})
		}
	}
	for i, f := range r.forms {
		c := f.text[0]
		r.byFirst[c] = append(r.byFirst[c], uint16(i))
		if u := upper(c); u != c {
			r.byFirst[u] = append(r.byFirst[u], uint16(i))
		}
	}
	for c := range 256 {
		r.starts[c] = len(r.byFirst[c]) > 0 || isEscape(byte(c))
		switch {
		case isEscape(byte(c)):
			for d := range 256 {
				r.setPair(byte(c), byte(d))
			}
		case r.starts[c]:
			for _, d := range []byte(`\%&+`) {
				r.setPair(byte(c), d)
			}
		}
	}
	for _, f := range r.forms {
		for _, c := range [2]byte{f.text[0], upper(f.text[0])} {
			for d := range 256 {
				if len(f.text) == 1 || lower(byte(d)) == f.text[1] {
					r.setPair(c, byte(d))
				}
			}
		}
	}
	return r
}

// formsOf returns the spellings of value searched for: its text forms,
// and each of them in base64 and hex.
func formsOf(value string) []string {
	forms := []string{value} // whatever its length: so there is always one form
	add := func(s string) {
		if len(s) >= minForm && !slices.Contains(forms, s) {
			forms = append(forms, s)
		}
	}
	if scheme, token, ok := strings.Cut(value, " "); ok {
		add(token)
		if strings.EqualFold(scheme, "basic") {
			if dec, err := base64.StdEncoding.DecodeString(token); err == nil {
				add(string(dec))
				if _, secret, ok := strings.Cut(string(dec), ":"); ok {
					add(secret)
				}
			}
		}
	}
	for _, text := range slices.Clone(forms) {
		for align := range 3 {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				add(base64Inner(enc, text, align))
			}
		}
		add(hex.EncodeToString([]byte(text)))
	}
	return forms
}

// base64Inner returns the characters of the base64 of text that depend on
// text's bytes alone, where text follows align other bytes: what every
// encoding holding text at that alignment contains.
func base64Inner(enc *base64.Encoding, text string, align int) string {
	b := make([]byte, align, align+len(text)+2)
	b = append(append(b, text...), 0, 0)
	s := enc.EncodeToString(b)
	from := (8*align + 5) / 6           // the first character wholly inside text
	to := (8*(align+len(text)) - 6) / 6 // the last
	return s[from : to+1]
}

// String returns s with every form replaced.
func (r *redactor) String(s string) string {
	if r.index(s) < 0 {
		return s
	}
	out, _ := r.redact(nil, []byte(s), true)
	return string(out)
}

// index returns where the first form in s begins, or -1.
func (r *redactor) index(s string) int {
	if r == nil {
		return -1
	}
	b := []byte(s)
	for i := range b {
		if !r.starts[b[i]] || i+1 < len(b) && !r.mayBegin(b[i], b[i+1]) {
			continue
		}
		if _, n := r.at(b[i:], true); n > 0 {
			return i
		}
	}
	return -1
}

// redact appends b to out with every form replaced, and returns it with
// how much of b it took: all of it when final (b is the whole text), else
// up to where a form may begin that more text would complete.
func (r *redactor) redact(out, b []byte, final bool) ([]byte, int) {
	done := 0 // b[:done] is in out
	for i := 0; i < len(b); {
		if !r.starts[b[i]] || i+1 < len(b) && !r.mayBegin(b[i], b[i+1]) {
			i++
			continue
		}
		f, n := r.at(b[i:], final)
		switch {
		case n < 0:
			return append(out, b[done:i]...), i
		case n > 0:
			out = append(append(out, b[done:i]...), r.forms[f].repl...)
			i += n
			done = i
		default:
			i++
		}
	}
	return append(out, b[done:]...), len(b)
}

// at finds the longest form b begins with: its index and how many of b's
// bytes spell it; n is 0 when b begins with none, and -1 when that is
// not known before more text comes (never when final).
func (r *redactor) at(b []byte, final bool) (f, n int) {
	lists := [2][]uint16{r.byFirst[b[0]]}
	if isEscape(b[0]) {
		d, k := unescape(b, final)
		if k < 0 {
			return 0, -1
		}
		if k > 0 {
			lists[1] = r.byFirst[d[0]]
		}
	}
	f = -1
	for _, list := range lists {
		for _, i := range list {
			s := speller{b: b, text: r.forms[i].text, final: final}
			m := s.from(0, 0)
			if m < 0 {
				return 0, -1
			}
			if m > n {
				f, n = int(i), m
			}
		}
	}
	return f, n
}

// isEscape reports whether c may begin a character escape.
func isEscape(c byte) bool { return c == '\\' || c == '%' || c == '&' || c == '+' }

// speller reads b as text (lower case), each of text's bytes written as
// itself in either case or as a character escape. Each byte is read as
// itself first, then as an escape, so that what it finds does not depend
// on where a stream's reads end.
type speller struct {
	b, text []byte
	final   bool
	failed  map[[2]int]bool // (i, j) known not to spell text[j:], once reading has branched
}

// from returns how many bytes from b[i] spell text[j:], counted from
// b[0]; 0 when they do not, -1 when b ends before that is known (never
// when final).
func (s *speller) from(i, j int) int {
	for ; j < len(s.text); i, j = i+1, j+1 {
		if i == len(s.b) {
			if s.final {
				return 0
			}
			return -1
		}
		c := s.b[i]
		if !isEscape(c) {
			if lower(c) != s.text[j] {
				return 0
			}
			continue
		}
		if lower(c) != s.text[j] {
			return s.escaped(i, j)
		}
		// Both readings may go on: remember where both failed, so that
		// no text is read more than once from one place.
		if s.failed[[2]int{i, j}] {
			return 0
		}
		if m := s.from(i+1, j+1); m != 0 {
			return m
		}
		m := s.escaped(i, j)
		if m == 0 {
			if s.failed == nil {
				s.failed = map[[2]int]bool{}
			}
			s.failed[[2]int{i, j}] = true
		}
		return m
	}
	return i
}

// escaped is from with b[i] read as the first byte of an escape.
func (s *speller) escaped(i, j int) int {
	d, k := unescape(s.b[i:], s.final)
	switch {
	case k < 0:
		return -1
	case k == 0 || len(d) > len(s.text)-j:
		return 0
	}
	for x := range len(d) {
		if lower(d[x]) != s.text[j+x] {
			return 0
		}
	}
	return s.from(i+k, j+len(d))
}

// unescape reads the character escape b begins with: what it stands for
// and its length; 0 when b begins with none, -1 when b ends inside what
// may be one (never when final).
func unescape(b []byte, final bool) (string, int) {
	switch {
	case b[0] == '+':
		return " ", 1
	case b[0] == '%':
		return hexEscape(b, "%hh", final)
	case b[0] == '&':
		return unescapeRef(b, final)
	case len(b) < 2:
		if final {
			return "", 0
		}
		return "", -1
	}
	switch c := b[1]; c {
	case '"', '\\', '/', '\'':
		return string(b[1:2]), 2
	case 'b':
		return "\b", 2
	case 'f':
		return "\f", 2
	case 'n':
		return "\n", 2
	case 'r':
		return "\r", 2
	case 't':
		return "\t", 2
	case 'x':
		return hexEscape(b, `\xhh`, final)
	case 'u':
		return unescapeU(b, final)
	}
	return "", 0
}

// hexEscape reads an escape of pattern ('h' a hex digit, any other
// byte itself): the byte its last two digits stand for.
func hexEscape(b []byte, pattern string, final bool) (string, int) {
	n := match(b, pattern, final)
	if n <= 0 {
		return "", n
	}
	v := [1]byte{hexVal(b[n-2])<<4 | hexVal(b[n-1])}
	return string(v[:]), n // one byte: no allocation
}

// unescapeU reads \uXXXX, and a surrogate pair's second half after a
// first; a lone half is U+FFFD, as JSON decoders read it.
func unescapeU(b []byte, final bool) (string, int) {
	const pattern = `\uhhhh`
	n := match(b, pattern, final)
	if n <= 0 {
		return "", n
	}
	r := hex16(b[2:6])
	if utf16.IsSurrogate(r) && r < 0xdc00 {
		switch n2 := match(b[6:], pattern, final); {
		case n2 < 0:
			return "", -1
		case n2 > 0:
			if pair := utf16.DecodeRune(r, hex16(b[8:12])); pair != utf8.RuneError {
				return string(pair), 12
			}
		}
	}
	return string(r), 6 // a lone surrogate is U+FFFD
}

// unescapeRef reads an HTML or XML character reference ending in ";"
// ("&#47;", "&#x2F;", "&sol;"), as package html reads it.
func unescapeRef(b []byte, final bool) (string, int) {
	for k := 1; k < min(len(b), maxRef); k++ {
		c := b[k]
		if c == ';' {
			ref := string(b[:k+1])
			if s := html.UnescapeString(ref); s != ref && s != "" {
				return s, k + 1
			}
			return "", 0
		}
		if c != '#' && !isHex(c) && !('a' <= lower(c) && lower(c) <= 'z') {
			return "", 0
		}
	}
	if final || len(b) >= maxRef {
		return "", 0
	}
	return "", -1
}

// match reports whether b begins with pattern ('h' a hex digit, any other
// byte itself): its length, 0 when b does not, -1 when b ends inside it
// (never when final).
func match(b []byte, pattern string, final bool) int {
	for k := range len(pattern) {
		if k == len(b) {
			if final {
				return 0
			}
			return -1
		}
		if p := pattern[k]; p == 'h' && !isHex(b[k]) || p != 'h' && b[k] != p {
			return 0
		}
	}
	return len(pattern)
}

func hex16(b []byte) rune {
	return rune(hexVal(b[0]))<<12 | rune(hexVal(b[1]))<<8 | rune(hexVal(b[2]))<<4 | rune(hexVal(b[3]))
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= lower(c) && lower(c) <= 'f' }

// hexVal is the value of the hex digit c.
func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return lower(c) - 'a' + 10
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
