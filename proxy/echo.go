package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// An answer to a request the proxy put a credential on may echo it (a
// debugging endpoint that returns the request's headers): the proxy
// replaces every spelling of the value it can know in the answer's
// headers and body before the sandbox reads it (docs/egress.md,
// "Credentials"). By hand: no library replaces strings in a stream.

// minForm is the shortest part of a value that is replaced: shorter
// ones (a Basic user name's like) are not secret and would garble the
// answer.
const minForm = 8

// scrubChunk is how much of an answer's body is read at a time.
const scrubChunk = 32 << 10

// echoScrubber replaces a credential's value, spelled as it may be
// echoed, in answers.
type echoScrubber struct {
	forms [][]byte // longest first
	repl  []byte
	name  string
}

// newEchoScrubber returns the scrubber of c's value: the header's whole
// value, the token after its scheme ("Bearer T"), for Basic the decoded
// "user:secret" and the secret, each also as JSON and a URL would escape
// it where that differs.
func newEchoScrubber(c *Credential) *echoScrubber {
	parts := []string{c.Value} // whatever its length: so there is always one form
	add := func(s string) {
		if len(s) >= minForm && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	if scheme, token, ok := strings.Cut(c.Value, " "); ok {
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
	for _, p := range slices.Clone(parts) {
		if b, err := json.Marshal(p); err == nil {
			add(string(b[1 : len(b)-1]))
		}
		add(url.QueryEscape(p))
		add(url.PathEscape(p))
	}
	s := &echoScrubber{repl: []byte("[credential " + c.Name + " redacted]"), name: c.Name}
	for _, p := range parts {
		s.forms = append(s.forms, []byte(p))
	}
	slices.SortStableFunc(s.forms, func(a, b []byte) int { return len(b) - len(a) })
	return s
}

// scrubString replaces every form in v.
func (s *echoScrubber) scrubString(v string) string {
	for _, f := range s.forms {
		v = strings.ReplaceAll(v, string(f), string(s.repl))
	}
	return v
}

// next finds the earliest form in b (the longest where two start at
// once): its index and length, or -1.
func (s *echoScrubber) next(b []byte) (int, int) {
	at, n := -1, 0
	for _, f := range s.forms {
		if i := bytes.Index(b, f); i >= 0 && (at < 0 || i < at) {
			at, n = i, len(f)
		}
	}
	return at, n
}

// errEchoRefused is an answer the proxy cannot scrub.
var errEchoRefused = errors.New("refused")

// scrubAnswer readies resp, the answer to a request that carried the
// credential, for the sandbox: its headers scrubbed, its body read
// through the scrubber, its trailers dropped. An answer whose body is
// encoded (the proxy asked for none) or that upgrades the connection is
// refused: neither could be scrubbed.
func (s *echoScrubber) scrubAnswer(resp *http.Response) error {
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return fmt.Errorf("%w: the answer to a request that carried credential %q is encoded (%s), though the proxy asked for none: it could not be searched for the value", errEchoRefused, s.name, s.scrubString(enc))
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fmt.Errorf("%w: a request that carried credential %q may not upgrade its connection: what comes after could not be searched for the value", errEchoRefused, s.name)
	}
	for _, vs := range resp.Header {
		for i, v := range vs {
			vs[i] = s.scrubString(v)
		}
	}
	resp.Trailer = nil
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = &scrubReader{s: s, r: resp.Body}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return nil
}

// held is how many of b's last bytes could begin a form that more input
// would complete: the longest end of b that is the start of a form, so
// that a stream (server-sent events) is held back only where it must be.
func (s *echoScrubber) held(b []byte) int {
	for k := min(len(b), len(s.forms[0])-1); k > 0; k-- {
		for _, f := range s.forms {
			if len(f) > k && bytes.HasPrefix(f, b[len(b)-k:]) {
				return k
			}
		}
	}
	return 0
}

// scrubReader is a body read through a scrubber. It holds back the last
// bytes of what it read that could begin a form, until more comes.
type scrubReader struct {
	s     *echoScrubber
	r     io.ReadCloser
	chunk []byte // what each read of r reads into
	buf   []byte // read, not yet scrubbed
	out   []byte // scrubbed, not yet returned
	err   error  // the body's error, once buf is spent
}

func (sr *scrubReader) Read(p []byte) (int, error) {
	for len(sr.out) == 0 {
		if sr.err != nil {
			if len(sr.buf) == 0 {
				return 0, sr.err
			}
			sr.emit(len(sr.buf))
			continue
		}
		if sr.chunk == nil {
			sr.chunk = make([]byte, scrubChunk)
		}
		n, err := sr.r.Read(sr.chunk)
		sr.buf = append(sr.buf, sr.chunk[:n]...)
		if err != nil {
			sr.err = err
			continue
		}
		sr.emit(len(sr.buf) - sr.s.held(sr.buf))
	}
	n := copy(p, sr.out)
	sr.out = sr.out[n:]
	return n, nil
}

// emit moves buf to out, every form in it replaced, up to upto bytes of
// buf where no form begins (the rest may begin one that more input
// completes).
func (sr *scrubReader) emit(upto int) {
	for {
		at, n := sr.s.next(sr.buf)
		if at < 0 || at >= upto && sr.err == nil {
			break
		}
		sr.out = append(append(sr.out, sr.buf[:at]...), sr.s.repl...)
		sr.buf = sr.buf[at+n:]
		upto -= at + n
	}
	if sr.err != nil {
		upto = len(sr.buf)
	}
	if upto > 0 {
		sr.out = append(sr.out, sr.buf[:upto]...)
		sr.buf = sr.buf[upto:]
	}
}

func (sr *scrubReader) Close() error { return sr.r.Close() }

// scrubResponse is the forwarders' ModifyResponse: the answer to a
// request that carried a credential is scrubbed of its value.
func (p *Proxy) scrubResponse(resp *http.Response) error {
	if rt, ok := resp.Request.Context().Value(routeKey{}).(*route); ok && rt.echo != nil {
		return rt.echo.scrubAnswer(resp)
	}
	return nil
}

// putCredential sets c on r, asks for an answer that is not compressed
// (so that it can be searched for the value), and has rt's answer
// scrubbed.
func (p *Proxy) putCredential(r *http.Request, rt *route, c *Credential) {
	r.Header.Set(c.Header, c.Value)
	r.Header.Set("Accept-Encoding", "identity")
	rt.echo = p.echo[c.Name]
}
