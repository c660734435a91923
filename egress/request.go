package egress

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/airlock-sandbox/airlock/decision"
)

// Request is an HTTP request to an inspected entry, as the proxy read it.
type Request struct {
	// Host is the destination as the gate normalised it (host:port), for
	// reasons.
	Host string
	// Method is the request's method, as sent.
	Method string
	// Path is the request's path as sent, percent-escapes and all
	// (url.URL.EscapedPath); RawQuery its query without the "?".
	Path, RawQuery string
	// Header holds the request's headers under canonical names.
	Header map[string][]string
	// Upgrade is the protocol the request asks to upgrade to, in lower
	// case ("websocket"), or "".
	Upgrade string
}

// maxShownPath bounds how much of a path a reason quotes.
const maxShownPath = 256

// head is the request's method and path as a reason quotes them.
func (q *Request) head() string {
	p := q.Path
	if len(p) > maxShownPath {
		p = p[:maxShownPath] + "..."
	}
	return fmt.Sprintf("%+q", q.Method+" "+p)
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
	path, err := CanonicalPath(q.Path)
	if err != nil {
		d.Reason = fmt.Sprintf("%s refused: %v, so no rule of entry %q can be matched with certainty", lead, err, e.raw)
		return d
	}
	query, err := url.ParseQuery(q.RawQuery)
	if err != nil {
		d.Reason = fmt.Sprintf("%s refused: its query is malformed (%v), so no rule of entry %q can be matched with certainty", lead, err, e.raw)
		return d
	}
	for _, r := range e.rules {
		if !r.matches(q, path, query) {
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

// CanonicalPath decodes an escaped request path for matching, refusing
// any path whose meaning a server might read otherwise than the rule:
// dot segments (".", "..", also escaped, also before a ";"), empty
// segments ("//"), an escaped "/", "\" or NUL, a raw "\" and control
// characters. An empty path is "/".
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
		if c == '%' {
			if i+2 >= len(escaped) || unhex(escaped[i+1]) < 0 || unhex(escaped[i+2]) < 0 {
				return "", errors.New("the path has a malformed percent-escape")
			}
			c = byte(unhex(escaped[i+1])<<4 | unhex(escaped[i+2]))
			i += 2
			if c == '/' || c == '\\' || c == 0 {
				return "", errors.New(`the path has an escaped "/", "\" or NUL`)
			}
		} else if c == '\\' {
			return "", errors.New(`the path has a "\"`)
		}
		if c < 0x20 || c == 0x7f {
			return "", errors.New("the path has a control character")
		}
		b.WriteByte(c)
	}
	p := b.String()
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		seg, _, _ := strings.Cut(s, ";")
		switch {
		case seg == "." || seg == "..":
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
