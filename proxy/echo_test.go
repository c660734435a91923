package proxy

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// scrubWhole is the scrubber applied to all of b at once: the reference
// a stream, read in any pieces, must give.
func scrubWhole(s *echoScrubber, b []byte) []byte {
	var out []byte
	for {
		at, n := s.next(b)
		if at < 0 {
			return append(out, b...)
		}
		out = append(append(out, b[:at]...), s.repl...)
		b = b[at+n:]
	}
}

func testScrubber() *echoScrubber {
	token := base64.StdEncoding.EncodeToString([]byte("x-access-token:s3cret/t0ken+value"))
	return newEchoScrubber(&Credential{Name: "gh", Header: "Authorization", Value: "Basic " + token})
}

// TestEchoScrubberForms: every spelling of a Basic credential's value an
// answer may echo is replaced; the user name alone, too short to be
// secret, is not.
func TestEchoScrubberForms(t *testing.T) {
	s := testScrubber()
	token := base64.StdEncoding.EncodeToString([]byte("x-access-token:s3cret/t0ken+value"))
	for _, in := range []string{
		"Basic " + token, token, "x-access-token:s3cret/t0ken+value", "s3cret/t0ken+value",
		"s3cret%2Ft0ken%2Bvalue", "x-access-token%3As3cret%2Ft0ken%2Bvalue",
	} {
		got := s.scrubString("<" + in + ">")
		if got != "<[credential gh redacted]>" {
			t.Errorf("%q scrubbed to %q", in, got)
		}
	}
	if got := s.scrubString("user x-access-token here"); got != "user x-access-token here" {
		t.Errorf("the user name alone was scrubbed: %q", got)
	}
}

// TestScrubReaderStreams: a body read in any pieces, its forms split
// across reads anywhere, gives what scrubbing it whole gives.
func TestScrubReaderStreams(t *testing.T) {
	s := testScrubber()
	parts := []string{"head ", "s3cret/t0ken+value", " mid ", "x-access-token:s3cret/t0ken+value", "s3cret/t0ken+valu", " tail", "s3cret/t0ken+value"}
	body := []byte(strings.Join(parts, ""))
	body = append(bytes.Repeat([]byte("a"), scrubChunk-5), body...) // a form across two chunks
	want := scrubWhole(s, body)
	for name, r := range map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
	} {
		sr := &scrubReader{s: s, r: io.NopCloser(r(bytes.NewReader(body)))}
		got, err := io.ReadAll(iotest.OneByteReader(sr))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v\nwant %q", name, got, err, want)
		}
		if bytes.Contains(got, []byte("s3cret/t0ken+value")) {
			t.Errorf("%s: the secret is left", name)
		}
	}
}

// FuzzScrubReader: any body, read in pieces of any size, scrubs as the
// whole does, and never holds a form.
func FuzzScrubReader(f *testing.F) {
	f.Add([]byte("x s3cret/t0ken+value y"), uint8(3))
	f.Add([]byte("s3cret/t0ken+valus3cret/t0ken+value"), uint8(1))
	f.Add([]byte(""), uint8(7))
	s := testScrubber()
	f.Fuzz(func(t *testing.T, body []byte, step uint8) {
		src := &chunked{b: body, n: int(step%17) + 1}
		got, err := io.ReadAll(&scrubReader{s: s, r: io.NopCloser(src)})
		if err != nil {
			t.Fatal(err)
		}
		if want := scrubWhole(s, body); !bytes.Equal(got, want) {
			t.Fatalf("streamed %q, whole %q", got, want)
		}
	})
}

// chunked reads b n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// TestScrubReaderHoldsOnlyAPrefix: what a read gives is passed on at
// once unless its end could begin the value (an event stream's events
// are not held back until the next one).
func TestScrubReaderHoldsOnlyAPrefix(t *testing.T) {
	s := testScrubber()
	for _, c := range []struct{ in, now string }{
		{"data: one\n\n", "data: one\n\n"},
		{"data: s3cr", "data: "},
		{"data: x-access", "data: "},
		{"data: s3cret/t0ken+value\n", "data: [credential gh redacted]\n"},
	} {
		pr, pw := io.Pipe()
		sr := &scrubReader{s: s, r: pr}
		go pw.Write([]byte(c.in)) // and nothing more for now
		got := make([]byte, 100)
		n, err := sr.Read(got)
		if err != nil || string(got[:n]) != c.now {
			t.Errorf("%q: read %q, %v; want %q at once", c.in, got[:n], err, c.now)
		}
		pw.Close()
	}
}
