package egress

import (
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/decision"
)

// Request is an HTTP request to an inspected entry, as the proxy will
// forward it.
type Request struct {
	// Host is the destination as the gate normalised it (host:port), for
	// reasons.
	Host string
	// Method is the request's method, as sent.
	Method string
	// Path is the request's target as forwarded up to its "?", escapes
	// and all (url.URL.RequestURI's); RawQuery its query without the "?".
	Path, RawQuery string
	// Header holds the request's headers as forwarded (ForwardHeader), under
	// canonical names.
	Header map[string][]string
	// Upgrade is the protocol the request asks to upgrade to, in lower
	// case ("websocket"), or "" (ForwardHeader's).
	Upgrade string
}

// head is the request's method and path as a reason quotes them.
func (q *Request) head() string {
	return fmt.Sprintf("%+q", q.Method+" "+clipped(q.Path))
}

// CheckRequest decides one request to an entry the gate allowed: deny
// rules first, then allow rules, then deny, once the entry has rules.
// Rule is the name of the rule that decided, "" when none did. An entry
// without rules allows every request but a WebSocket upgrade, which only
// an allow rule with WebSocket set allows; other upgrades and CONNECT are
// refused always.
func (e *Entry) CheckRequest(q *Request) decision.Decision {
	d := decision.Decision{Gate: decision.GateEgress}
	if e == nil || !e.inspect {
		d.Reason = fmt.Sprintf("request %s to %s refused: its entry is not inspected, so no rule can decide it", q.head(), q.Host)
		return d
	}
	lead := fmt.Sprintf("task %q: request %s to %s", e.task, q.head(), q.Host)
	switch {
	case q.Method == "CONNECT":
		d.Reason = lead + " refused: CONNECT inside an inspected tunnel is not forwarded"
		return d
	case q.Upgrade != "" && q.Upgrade != "websocket":
		d.Reason = fmt.Sprintf("%s refused: upgrading to %+q is not supported (only WebSocket, where a rule allows it)", lead, q.Upgrade)
		return d
	case len(e.rules) == 0 && q.Upgrade != "":
		d.Reason = fmt.Sprintf("%s refused: entry %q has no rule, and only an allow rule with \"websocket\": true lets a request upgrade to WebSocket", lead, e.raw)
		return d
	case len(e.rules) == 0:
		d.Verdict = decision.Allow
		d.Reason = fmt.Sprintf("%s allowed: entry %q is inspected and has no rules, so every request is", lead, e.raw)
		return d
	}
	f, err := readForm(q)
	if err != nil {
		d.Reason = fmt.Sprintf("%s refused: %v, so no rule of entry %q can be matched with certainty", lead, err, e.raw)
		return d
	}
	for _, r := range e.rules {
		if !r.matches(q, f.path, f.query, f.header) {
			continue
		}
		d.Rule = r.name
		switch {
		case r.deny:
			d.Reason = fmt.Sprintf("%s refused by deny rule %q of entry %q (deny rules win)", lead, r.name, e.raw)
		case q.Upgrade != "" && !r.websocket:
			d.Reason = fmt.Sprintf("%s refused: rule %q of entry %q allows the request but not its WebSocket upgrade (set \"websocket\": true)", lead, r.name, e.raw)
		default:
			d.Verdict = decision.Allow
			d.Reason = fmt.Sprintf("%s allowed by rule %q of entry %q", lead, r.name, e.raw)
		}
		return d
	}
	d.Reason = fmt.Sprintf("%s refused: no rule of entry %q allows it (once an entry has rules, what they do not allow is refused)", lead, e.raw)
	return d
}

// form is a request as rules read it.
type form struct {
	path   string              // CanonicalPath's
	query  map[string][]string // parsed
	header map[string][]string // names folded (FoldHeaderName)
}

// overrides are the headers, folded, by which servers take another
// method (Express's method-override, Laravel, Google's APIs) or path (IIS
// URL Rewrite, Symfony) than the request line's.
var overrides = []string{"x-http-method-override", "x-http-method", "x-method-override", "x-original-url", "x-rewrite-url"}

// readForm reads q as rules match it, refusing what servers read in more
// than one way: a method not in upper case, a path CanonicalPath refuses,
// a query that does not parse or names "_method", a header that
// overrides the method or path, two headers that servers fold into one.
func readForm(q *Request) (form, error) {
	var f form
	if q.Method != strings.ToUpper(q.Method) {
		return f, errors.New(`its method is not in upper case (Werkzeug and Express read "delete" as DELETE)`)
	}
	var err error
	if f.path, err = CanonicalPath(q.Path); err != nil {
		return f, err
	}
	if f.query, err = url.ParseQuery(q.RawQuery); err != nil {
		return f, fmt.Errorf("its query is malformed (%v)", err)
	}
	if _, ok := f.query["_method"]; ok {
		return f, errors.New(`its query names "_method", which Laravel reads as the request's method`)
	}
	f.header = make(map[string][]string, len(q.Header))
	spelt := make(map[string]string, len(q.Header)) // folded name: as sent
	for _, k := range slices.Sorted(maps.Keys(q.Header)) {
		fk := FoldHeaderName(k)
		if o, dup := spelt[fk]; dup {
			return f, fmt.Errorf(`it carries headers %s and %s, which servers read as one (CGI and WSGI read "_" as "-")`, shown(o), shown(k))
		}
		if slices.Contains(overrides, fk) {
			return f, fmt.Errorf("it carries %s, by which servers take another method or path", shown(k))
		}
		spelt[fk], f.header[fk] = k, q.Header[k]
	}
	return f, nil
}

// shown is s quoted and bounded for a reason.
func shown(s string) string {
	return fmt.Sprintf("%+q", clipped(s))
}

// CanonicalPath decodes an escaped request path for matching, refusing
// any path whose routing differs between common servers, so that the
// path the rules match is the one every server routes: a ";" (Tomcat,
// Jetty and Spring drop a segment's ";parameters": "/admin;x/y" is
// "/admin/y" to them), an escaped "/", "\", ";", "%" or NUL (decoded
// before routing by some, after by others, twice by a few), a raw "\"
// (a "/" to IIS and to some frameworks), control characters, bytes that
// decode to no UTF-8 (an overlong "/" or "." is one to lax decoders), dot
// segments (".", "..", also escaped) and empty segments ("//"). An empty
// path is "/".
func CanonicalPath(escaped string) (string, error) {
	if escaped == "" {
		return "/", nil
	}
	if escaped[0] != '/' {
		return "", errors.New("the path does not start with /")
	}
	var b strings.Builder
	b.Grow(len(escaped))
	for i := 0; i < len(escaped); i++ {
		c := escaped[i]
		switch c {
		case '%':
			if i+2 >= len(escaped) || unhex(escaped[i+1]) < 0 || unhex(escaped[i+2]) < 0 {
				return "", errors.New("the path has a malformed percent-escape")
			}
			c = byte(unhex(escaped[i+1])<<4 | unhex(escaped[i+2]))
			i += 2
			if strings.IndexByte("/\\;%\x00", c) >= 0 {
				return "", errors.New(`the path has an escaped "/", "\", ";", "%" or NUL`)
			}
		case '\\':
			return "", errors.New(`the path has a "\"`)
		case ';':
			return "", errors.New(`the path has a ";" (Tomcat, Jetty and Spring route "/admin;x/y" as "/admin/y")`)
		}
		if c < 0x20 || c == 0x7f {
			return "", errors.New("the path has a control character")
		}
		b.WriteByte(c)
	}
	p := b.String()
	if !utf8.ValidString(p) {
		return "", errors.New("the path decodes to bytes that are not UTF-8")
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		switch {
		case s == "." || s == "..":
			return "", errors.New("the path has a dot segment")
		case s == "" && i < len(segs)-1:
			return "", errors.New("the path has an empty segment (//)")
		}
	}
	return p, nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// hopByHop are the headers a proxy does not forward (RFC 9110, 7.6.1, and
// those httputil.ReverseProxy removes), with the client's own forwarding
// headers, which ReverseProxy's Rewrite removes.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// ForwardHeader removes from h, whose names are canonical, the headers a
// proxy does not forward, in place and before the request is decided, so
// that the request decided is the request forwarded: the headers
// Connection names, and the hop-by-hop and forwarding headers (hopByHop),
// but for "TE: trailers" and a request's "Connection: Upgrade" and
// Upgrade, which go on as httputil.ReverseProxy sends them. (It removes
// them after its caller decided: a request allowed for its "X-Tenant:
// acme" and naming X-Tenant in Connection would reach its destination
// without it.) It returns the protocol the request asks to upgrade to, in
// lower case; "(none named)" when Connection asks for an upgrade and no
// Upgrade names one; "" when it asks for none.
func ForwardHeader(h map[string][]string) (upgrade string) {
	var up string
	if hasToken(h["Connection"], "upgrade") {
		if vs := h["Upgrade"]; len(vs) > 0 {
			up = vs[0]
		}
		upgrade = strings.ToLower(up)
		if upgrade == "" {
			upgrade = "(none named)"
		}
	}
	trailers := hasToken(h["Te"], "trailers")
	for _, v := range h["Connection"] {
		for t := range strings.SplitSeq(v, ",") {
			if t = textproto.TrimString(t); t != "" {
				delete(h, textproto.CanonicalMIMEHeaderKey(t))
			}
		}
	}
	for _, k := range hopByHop {
		delete(h, k)
	}
	if trailers {
		h["Te"] = []string{"trailers"}
	}
	if up != "" {
		h["Connection"], h["Upgrade"] = []string{"Upgrade"}, []string{up}
	}
	return upgrade
}

// hasToken reports whether one of the comma-separated values holds token,
// compared without case.
func hasToken(vs []string, token string) bool {
	for _, v := range vs {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(t), token) {
				return true
			}
		}
	}
	return false
}
