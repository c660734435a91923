package proxy

import (
	"net/http"
	"strings"
)

// reasonNotAuthority refuses a CONNECT whose target is not host:port.
const reasonNotAuthority = "CONNECT %+q refused: its target must be host:port (authority form); the Host header is never taken instead"

// redactUserinfo replaces the userinfo of a request target or a request
// line ("CONNECT u:p@h:443 HTTP/1.1", "GET http://u:p@h/ HTTP/1.1") with
// "[userinfo redacted]", so that no secret a client put there (a
// gateway's token, say) reaches a record. Such requests are refused all
// the same (reasonUserinfo).
func redactUserinfo(s string) string {
	start := 0
	if i := strings.IndexByte(s, ' '); i >= 0 {
		start = i + 1 // a request line: the target follows the method
	}
	if i := strings.Index(s[start:], "://"); i >= 0 && !strings.ContainsAny(s[start:start+i], "/?#@ ") {
		start += i + 3 // after the scheme
	}
	rest := s[start:]
	end := strings.IndexAny(rest, "/?# ")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return s
	}
	return s[:start] + "[userinfo redacted]" + rest[at:]
}

// requestHost is the destination of an HTTP proxy request exactly as the
// client wrote it on its request line: a CONNECT's request-target (which
// must be authority form, RFC 9112 §3.2.3), an absolute-form URL's
// authority. net/http has parsed that line already, but the host it
// returns is percent-decoded ("caf%C3%A9.test" comes back "café.test"),
// and for a CONNECT whose target is not an authority ("CONNECT /x") it is
// the Host header's: the proxy decides on, dials and records the bytes the
// client sent on the line, never a decoding of them nor another header
// (the gate refuses a '%' in a host, as it does from SOCKS). ok is false
// for a CONNECT whose target is not an authority.
func requestHost(r *http.Request) (host string, ok bool) {
	t := r.RequestURI
	if r.Method == http.MethodConnect {
		return t, t != "" && !strings.HasPrefix(t, "/")
	}
	_, rest, found := strings.Cut(t, "://")
	if !found {
		return r.URL.Host, true
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:] // userinfo, refused on its own (r.URL.User)
	}
	return rest, true
}
