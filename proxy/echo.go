package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
)

// An answer from a credential's host may hold its value: the host got it
// on this request, or on an earlier one and keeps it (a request dump
// fetched later). Every answer from such a host, whatever the request
// carried, reaches the sandbox through a redactingWriter, the one place
// its bytes pass: the header fields of its 1xx and final responses, its
// body and its trailers. What could not be searched is refused before
// any of it is written (docs/egress.md, "Credentials").

// answerRedactor returns the redactor of the answers from t: nil when no
// credential of the proxy is for t.
func (p *Proxy) answerRedactor(t egress.Target) *redactor {
	if len(p.creds) == 0 {
		return nil
	}
	var cs []*Credential
	for _, name := range p.gate.Credentials(p.task, t) {
		if c := p.creds[name]; c != nil {
			cs = append(cs, c)
		}
	}
	switch len(cs) {
	case 0:
		return nil
	case 1:
		return p.echo[cs[0].Name]
	}
	return newRedactor(cs...)
}

// guardRequest readies r, to a credential's host, for an answer that can
// be searched: not compressed, and whole (a range of it could hold a
// piece of the value, which no search recognises).
func guardRequest(r *http.Request) {
	r.Header.Set("Accept-Encoding", "identity")
	r.Header.Del("Range")
	r.Header.Del("If-Range")
}

// putCredential sets c on r.
func putCredential(r *http.Request, c *Credential) {
	r.Header.Set(c.Header, c.Value)
}

// scrubResponse is the forwarders' ModifyResponse: an answer from a
// credential's host that could not be searched for the value is refused
// (an encoded body, an upgrade, a part of a body), and one with a body
// loses its length, which the redaction may change.
func (p *Proxy) scrubResponse(resp *http.Response) error {
	rt, _ := resp.Request.Context().Value(routeKey{}).(*route)
	if rt == nil || rt.redact == nil {
		return nil
	}
	const lead = "an answer from a credential's host is searched for its value, and this one could not be: "
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
		return errors.New(lead + "it upgrades the connection")
	case resp.StatusCode == http.StatusPartialContent:
		return errors.New(lead + "it is a part of a body, though the proxy asked for the whole")
	}
	for _, enc := range resp.Header.Values("Content-Encoding") {
		for _, e := range strings.Split(enc, ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.EqualFold(e, "identity") {
				return fmt.Errorf(lead+"it is encoded (%s), though the proxy asked for no encoding", rt.redact.String(e))
			}
		}
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return nil
}

// redactingWriter is the writer of an answer from a credential's host:
// it scrubs the header fields of every response written (1xx ones too)
// and the trailers, and passes the body on as it comes, holding back
// only what could begin a form that more bytes would complete. It
// offers no Hijack: what follows an upgrade could not be searched.
type redactingWriter struct {
	http.ResponseWriter
	r           *redactor
	wroteHeader bool
	held, out   []byte // read and not yet searched; the search's output
}

// WriteHeader scrubs the header before it is written.
func (w *redactingWriter) WriteHeader(code int) {
	if code >= 200 {
		if w.wroteHeader {
			return
		}
		w.wroteHeader = true
	}
	w.r.scrubHeader(w.Header())
	w.ResponseWriter.WriteHeader(code)
}

// Write passes b on, every form in it replaced.
func (w *redactingWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	in := b
	if len(w.held) > 0 {
		w.held = append(w.held, b...)
		in = w.held
	}
	var took int
	w.out, took = w.r.redact(w.out[:0], in, false)
	w.held = append(w.held[:0], in[took:]...)
	if len(w.out) > 0 {
		if _, err := w.ResponseWriter.Write(w.out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// FlushError flushes what has been searched.
func (w *redactingWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// finish ends the answer: the bytes held back, then the trailers
// scrubbed. The handler has not returned yet: the server sends the
// trailers after.
func (w *redactingWriter) finish() {
	if len(w.held) > 0 {
		w.out, _ = w.r.redact(w.out[:0], w.held, true)
		w.held = w.held[:0]
		_, _ = w.ResponseWriter.Write(w.out)
	}
	w.r.scrubHeader(w.Header())
}

// scrubHeader scrubs h in place: a field whose name holds a form is
// dropped, as is such a name in Trailer's list (a name cannot be
// rewritten and keep its meaning); every other value has its forms
// replaced.
func (r *redactor) scrubHeader(h http.Header) {
	for k, vs := range h {
		if r.index(k) >= 0 {
			delete(h, k)
			continue
		}
		kept := vs[:0]
		for _, v := range vs {
			if k == "Trailer" {
				names := slices.DeleteFunc(strings.Split(v, ","), func(n string) bool { return r.index(n) >= 0 })
				if v = strings.Join(names, ","); strings.TrimSpace(v) == "" {
					continue
				}
			}
			kept = append(kept, r.String(v))
		}
		if len(kept) == 0 {
			delete(h, k)
		} else {
			h[k] = kept
		}
	}
}
