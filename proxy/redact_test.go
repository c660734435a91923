package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"

	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

const (
	testUser   = "x-access-token"
	testSecret = "s3cret/t0ken+value=="
)

// testRedactor redacts a Basic credential: its forms are the most.
func testRedactor() *redactor {
	return newRedactor(&Credential{Name: "gh", Header: "Authorization", Value: testBasic()})
}

func testBasic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(testUser+":"+testSecret))
}

// TestRedactorForms: every spelling of a credential's value a client
// decodes is replaced; a part too short to be secret, and text that
// only looks like an escape, are not.
func TestRedactorForms(t *testing.T) {
	r := testRedactor()
	token := strings.TrimPrefix(testBasic(), "Basic ")
	redacted := "<[credential gh redacted]>"
	for _, in := range []string{
		testBasic(), token, testUser + ":" + testSecret, testSecret,
		strings.ToUpper(testSecret), strings.ToLower(token),
		`s3cret\/t0ken+value==`, `s3cret\u002Ft0ken\u002bvalue\u003d\u003D`, `s3cret\x2ft0ken\x2Bvalue==`,
		"s3cret%2Ft0ken%2bvalue%3D%3d", "%73%33%63ret/t0ken+value==",
		"s3cret&sol;t0ken&plus;value&equals;&#61;", "s3cret&#47;t0ken&#x2B;value&#X3D;=",
		hex.EncodeToString([]byte(testSecret)), strings.ToUpper(hex.EncodeToString([]byte(testSecret))),
	} {
		if got := r.String("<" + in + ">"); got != redacted {
			t.Errorf("%q redacted to %q", in, got)
		}
	}
	// Base64 of the value inside more text, at each alignment: what is
	// left of it holds none of the secret's bytes.
	for _, pre := range []string{"", "a", "ab"} {
		for _, post := range []string{"", "xyz"} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
				in := enc.EncodeToString([]byte(pre + testSecret + post))
				got := r.String(in)
				// At most the characters of pre and post, and one on each
				// side that a byte of each shares with the secret.
				if !strings.Contains(got, "[credential gh redacted]") || len(got) > len("[credential gh redacted]")+(len(pre)+len(post))*4/3+4 {
					t.Errorf("base64 of %q: %q redacted to %q", pre+testSecret+post, in, got)
				}
			}
		}
	}
	// A value beyond ASCII, its character escaped as a JSON surrogate pair.
	ru := newRedactor(&Credential{Name: "u", Value: "tok\U0001F600en-value"})
	if got := ru.String(`"tok\ud83d\ude00en-value"`); got != `"[credential u redacted]"` {
		t.Errorf("surrogate pair: %q", got)
	}
	for _, in := range []string{
		"user x-access-token here", // the user name alone
		"s3cret/t0ken+valu",        // a part
		`s3cret\\/t0ken+value==`,   // an escaped backslash, then a slash
		"s3cret%2Gt0ken+value==",   // not an escape
		"s3cret&sol t0ken+value==", // a reference without its ";"
		"s3cret&#47t0ken+value==",  // the same
	} {
		if got := r.String(in); got != in {
			t.Errorf("%q redacted to %q", in, got)
		}
	}
}

// answer writes body through a redactingWriter in pieces of n bytes (all
// at once when n is 0) and returns what the client gets.
func answer(r *redactor, body []byte, n int) []byte {
	rec := httptest.NewRecorder()
	w := &redactingWriter{ResponseWriter: rec, r: r}
	for len(body) > 0 {
		k := len(body)
		if n > 0 {
			k = min(k, n)
		}
		w.Write(body[:k])
		body = body[k:]
	}
	w.finish()
	return rec.Body.Bytes()
}

// TestRedactingWriterStreams: a body written in any pieces, its forms
// split anywhere (inside an escape too), gives what redacting it whole
// gives.
func TestRedactingWriterStreams(t *testing.T) {
	r := testRedactor()
	body := []byte(strings.Join([]string{"head ", testSecret, " mid ", testUser + ":" + testSecret, `s3cret\/t0ken+valu`, " tail ",
		`s3cret\u002Ft0ken+value==`, " & % \\", "s3cret&#x2F;t0ken+value=="}, ""))
	want, _ := r.redact(nil, body, true)
	for _, n := range []int{0, 1, 2, 3, 7, 16} {
		got := answer(r, body, n)
		if !bytes.Equal(got, want) {
			t.Errorf("in pieces of %d: %q\nwant %q", n, got, want)
		}
		if bytes.Contains(got, []byte("t0ken+value")) {
			t.Errorf("in pieces of %d: the secret is left: %q", n, got)
		}
	}
}

// TestRedactingWriterHoldsOnlyAPrefix: what a write gives is passed on at
// once unless its end could begin a form (an event stream's events are
// not held back until the next one).
func TestRedactingWriterHoldsOnlyAPrefix(t *testing.T) {
	r := testRedactor()
	for _, c := range []struct{ in, now string }{
		{"data: one\n\n", "data: one\n\n"},
		{"data: s3cr", "data: "},
		{"data: x-access", "data: "},
		{`data: s3cret\`, "data: "},
		{"data: %7", "data: "},
		{"data: s3cret/t0ken+value==\n", "data: [credential gh redacted]\n"},
	} {
		rec := httptest.NewRecorder()
		w := &redactingWriter{ResponseWriter: rec, r: r}
		w.Write([]byte(c.in))
		if got := rec.Body.String(); got != c.now {
			t.Errorf("%q: passed on %q; want %q at once", c.in, got, c.now)
		}
	}
}

// TestScrubHeader: a field whose name holds the value is dropped (and
// from Trailer's list), whatever the case of the name; values are
// redacted.
func TestScrubHeader(t *testing.T) {
	r := testRedactor()
	h := http.Header{
		"X-" + strings.ToUpper(testSecret[:6]) + testSecret[6:]: {"1"},
		"Trailer":  {"X-A, X-" + url.PathEscape(testSecret) + ", X-B"},
		"Location": {"/?t=" + url.QueryEscape(testSecret)},
	}
	r.scrubHeader(h)
	want := http.Header{"Trailer": {"X-A, X-B"}, "Location": {"/?t=[credential gh redacted]"}}
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("scrubbed %v, want %v", h, want)
	}
}

// escapeByte writes c as the fuzz test's choice k says: itself, its case
// flipped, or one of the escapes a client decodes. (TestEscapesAreReal
// checks each against the standard library's decoders.)
func escapeByte(c, k byte) string {
	named := map[byte]string{'/': "&sol;", '+': "&plus;", '=': "&equals;", ':': "&colon;", '-': "&#45;"}
	short := map[byte]string{'/': `\/`, '"': `\"`, '\\': `\\`}
	switch k % 12 {
	case 1:
		if 'a' <= lower(c) && lower(c) <= 'z' {
			return string(c ^ 0x20)
		}
	case 2:
		return fmt.Sprintf(`\u%04X`, c)
	case 3:
		return fmt.Sprintf(`\u%04x`, c)
	case 4:
		return fmt.Sprintf(`\x%02x`, c)
	case 5:
		return fmt.Sprintf("%%%02X", c)
	case 6:
		return fmt.Sprintf("%%%02x", c)
	case 7:
		return fmt.Sprintf("&#%d;", c)
	case 8:
		return fmt.Sprintf("&#x%X;", c)
	case 9:
		if s, ok := short[c]; ok {
			return s
		}
	case 10:
		if s, ok := named[c]; ok {
			return s
		}
	case 11: // a form's encoding
		switch c {
		case ' ':
			return "+"
		case '+':
			return "%2B"
		}
	}
	return string(c)
}

// TestEscapesAreReal: every escape the fuzz test writes is read back by
// a decoder of the standard library.
func TestEscapesAreReal(t *testing.T) {
	s := "Basic " + testUser + ":" + testSecret + `"\`
	decoders := map[byte]func(string) (string, error){
		1: func(e string) (string, error) { return s, nil }, // checked by EqualFold below
		2: unquoteJSON, 3: unquoteJSON, 9: unquoteJSON,
		4: func(e string) (string, error) { return strconv.Unquote(`"` + e + `"`) },
		5: url.PathUnescape, 6: url.PathUnescape, 11: url.QueryUnescape,
		7:  func(e string) (string, error) { return html.UnescapeString(e), nil },
		8:  func(e string) (string, error) { return html.UnescapeString(e), nil },
		10: func(e string) (string, error) { return html.UnescapeString(e), nil },
	}
	for k, decode := range decoders {
		var b strings.Builder
		for i := range len(s) {
			b.WriteString(escapeByte(s[i], k))
		}
		got, err := decode(b.String())
		if err != nil || got != s || k == 1 && !strings.EqualFold(b.String(), s) {
			t.Errorf("escape %d: %q decodes to %q, %v", k, b.String(), got, err)
		}
	}
}

func unquoteJSON(e string) (string, error) {
	var s string
	err := json.Unmarshal([]byte(`"`+e+`"`), &s)
	return s, err
}

// fillers are the bytes the fuzz test surrounds a spelling with: escapes'
// first bytes and text, none of the secret's letters.
const fillers = " \"\\%&+;#=:/<>xyzXYZ0\n"

// FuzzRedact: the fuzzer spells a text form of the credential's value
// as it is, in base64 (either alphabet, any alignment) or in hex, each
// byte of that written as itself, its case flipped or escaped, between
// bytes of any kind; the part of that spelling that depends on the value
// alone never survives, and a stream in any pieces gives what the whole
// does.
func FuzzRedact(f *testing.F) {
	f.Add([]byte("ab"), []byte("cd"), []byte{0, 2, 5, 7, 9, 10}, uint8(0), uint8(3), uint8(0))
	f.Add([]byte("\\"), []byte("%"), []byte{4, 4, 4}, uint8(1), uint8(1), uint8(1))
	f.Add([]byte("&#"), []byte(""), []byte{9}, uint8(2), uint8(5), uint8(2))
	f.Add([]byte(""), []byte("x"), []byte{1, 6, 8}, uint8(3), uint8(2), uint8(3))
	f.Add([]byte("zz"), []byte("\\u"), []byte{3, 10}, uint8(4), uint8(7), uint8(6))
	r := testRedactor()
	token := strings.TrimPrefix(testBasic(), "Basic ")
	texts := []string{testBasic(), token, testUser + ":" + testSecret, testSecret}
	f.Fuzz(func(t *testing.T, pre, post, choices []byte, which, step, mode uint8) {
		text := texts[int(which)%len(texts)]
		// The spelling before escapes, and where in it the value alone
		// decides the bytes.
		core, from, to := text, 0, len(text)
		align := string(append(bytes.Repeat([]byte{0}, int(mode/4)%3), pre...)[:int(mode/4)%3])
		switch mode % 4 {
		case 1, 2:
			enc := base64.StdEncoding
			if mode%4 == 2 {
				enc = base64.URLEncoding
			}
			a := len(align)
			core = enc.EncodeToString([]byte(align + text + "\x00\x00"))
			from, to = (8*a+5)/6, (8*(a+len(text))-6)/6+1
		case 3:
			core = hex.EncodeToString([]byte(align + text))
			from, to = 2*len(align), len(core)
		}
		var spelled, inner strings.Builder
		for i := range len(core) {
			k := byte(0)
			if len(choices) > 0 {
				k = choices[i%len(choices)]
			}
			e := escapeByte(core[i], k)
			spelled.WriteString(e)
			if from <= i && i < to {
				inner.WriteString(e)
			}
		}
		fill := func(b []byte) string {
			out := make([]byte, len(b))
			for i, c := range b {
				out[i] = fillers[int(c)%len(fillers)]
			}
			return string(out)
		}
		body := []byte(fill(pre) + spelled.String() + fill(post))
		whole, _ := r.redact(nil, body, true)
		if bytes.Contains(bytes.ToLower(whole), bytes.ToLower([]byte(inner.String()))) {
			t.Fatalf("%q survives in %q", inner.String(), whole)
		}
		if got := answer(r, body, int(step%17)+1); !bytes.Equal(got, whole) {
			t.Fatalf("streamed %q, whole %q", got, whole)
		}
	})
}

// BenchmarkRedact is the cost of an answer from a credential's host: a
// body of text and binary bytes, written in 32 KiB pieces.
func BenchmarkRedact(b *testing.B) {
	r := testRedactor()
	body := make([]byte, 1<<20)
	for i := range body {
		body[i] = byte(i*7919 + i/3)
	}
	copy(body[1000:], strings.Repeat("the quick brown fox & 100% {\"k\":\"v\\/w\"} ", 10000))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		answer(r, body, 32<<10)
	}
}
