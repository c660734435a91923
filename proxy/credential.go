package proxy

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
)

// The refusals of a request for what it carries of a credential.
const (
	reasonPlaceholder = "request to %s refused: it carries the placeholder of credential %q, which is only for %s (and its methods and paths)"
	reasonCredMissing = "request to %s refused: credential %q is for it, and the proxy has no value for it"
)

// checkCredentials refuses credentials the proxy cannot send safely: a
// value or a placeholder that is empty or holds what a header cannot
// carry, a placeholder used twice or found in a value. The errors never
// show a value.
func checkCredentials(cs []Credential) (map[string]*Credential, error) {
	m := map[string]*Credential{}
	for i := range cs {
		c := &cs[i]
		switch {
		case c.Name == "" || m[c.Name] != nil:
			return nil, fmt.Errorf("proxy: credential %d: its name %q is empty or used twice", i, c.Name)
		case c.Header == "" || strings.ContainsAny(c.Header, " \t\r\n:"):
			return nil, fmt.Errorf("proxy: credential %q: header %q is not a header name", c.Name, c.Header)
		case c.Value == "" || strings.ContainsAny(c.Value, "\r\n\x00"):
			return nil, fmt.Errorf("proxy: credential %q: its value is empty or has characters a header cannot carry", c.Name)
		case len(c.Placeholder) < 16 || strings.Contains(c.Value, c.Placeholder):
			return nil, fmt.Errorf("proxy: credential %q: its placeholder is shorter than 16 bytes, or part of its value", c.Name)
		}
		for _, o := range m {
			if strings.Contains(o.Placeholder, c.Placeholder) || strings.Contains(c.Placeholder, o.Placeholder) {
				return nil, fmt.Errorf("proxy: credentials %q and %q have overlapping placeholders", o.Name, c.Name)
			}
		}
		m[c.Name] = c
	}
	return m, nil
}

// credentialFor returns the credential the gate says a request to t is
// for (only on an inspected entry), or why the request is refused: it
// carries the placeholder of a credential that is not for it, or its
// credential would go over plain HTTP (secure is false).
func (p *Proxy) credentialFor(t egress.Target, entry *egress.Entry, q *egress.Request, r *http.Request, secure bool) (*Credential, string) {
	if len(p.creds) == 0 {
		return nil, ""
	}
	name := ""
	if entry.Inspected() {
		name = p.gate.Credential(p.task, t, q)
	}
	for _, c := range p.creds {
		if c.Name != name && carries(r, c.Placeholder) {
			return nil, fmt.Sprintf(reasonPlaceholder, t, c.Name, p.gate.CredentialHost(c.Name))
		}
	}
	if name == "" {
		return nil, ""
	}
	c := p.creds[name]
	if c == nil {
		return nil, fmt.Sprintf(reasonCredMissing, t, name)
	}
	if why := egress.PlainCredentialRefusal(t, name, secure); why != "" {
		return nil, why
	}
	return c, ""
}

// carries reports whether r holds s in its path, query or any header
// value (a Basic authorization decoded too).
func carries(r *http.Request, s string) bool {
	if strings.Contains(r.URL.EscapedPath(), s) || strings.Contains(r.URL.Path, s) || strings.Contains(r.URL.RawQuery, s) {
		return true
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
			if scheme, cred, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "basic") {
				if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil && strings.Contains(string(b), s) {
					return true
				}
			}
		}
	}
	return false
}

// scrub replaces every credential value in s, in every form the
// redactor knows, so that no reason or error shows one.
func (p *Proxy) scrub(s string) string { return p.redact.String(s) }

// scrubEvent scrubs the strings of an event before it is reported: what
// the client sent, and the reasons and errors, which may quote what a
// destination answered.
func (p *Proxy) scrubEvent(ev *Event) {
	if len(p.creds) == 0 {
		return
	}
	ev.Requested, ev.Method, ev.Path = p.scrub(ev.Requested), p.scrub(ev.Method), p.scrub(ev.Path)
	ev.Decision.Reason = p.scrub(ev.Decision.Reason)
	if ev.Err != nil {
		if msg := p.scrub(ev.Err.Error()); msg != ev.Err.Error() {
			ev.Err = errors.New(msg)
		}
	}
}
