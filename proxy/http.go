package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// ReasonHeader carries the reason of every refusal and failure the proxy
// answers over HTTP.
const ReasonHeader = "X-Airlock-Reason"

// reasonNotProxy answers a request that is neither CONNECT nor absolute-form.
const reasonNotProxy = "not a proxy request: send CONNECT host:port or an absolute-form URL (http://host/path)"

// writeRaw answers a connection that no http.Server serves with reason
// (in the body and in X-Airlock-Reason), then closes it.
func writeRaw(c net.Conn, status int, reason string) { writeRawHeader(c, status, reason, nil) }

// proxyAuthenticate is the challenge of a gateway's 407: Basic. (A
// constant, not a header map: a package-level map costs an initialiser
// at every start of the binary.)
const proxyAuthenticate = `Basic realm="airlock"`

// writeRawHeader is writeRaw with more header fields.
func writeRawHeader(c net.Conn, status int, reason string, more http.Header) {
	body := "airlock: " + reason + "\n"
	h := http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"X-Content-Type-Options": {"nosniff"},
		ReasonHeader:             {reason},
	}
	for k, v := range more {
		h[k] = v
	}
	resp := &http.Response{
		StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Close: true,
		Header:        h,
		ContentLength: int64(len(body)),
		Body:          io.NopCloser(strings.NewReader(body)),
	}
	_ = resp.Write(c)
	lingerClose(c)
}

// serveHTTP serves one HTTP request on a connection sniffed as HTTP.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	pc, _ := r.Context().Value(connKey{}).(*prefixConn)
	if pc != nil {
		pc.served.Store(true) // from here on, the server's writes are answers
	}
	if p.gw == nil {
		p.serveRequest(w, r)
		return
	}
	t, why := p.gw.checkHeader(r.Header)
	if t != nil && pc != nil {
		// A connection is one client's: a later request on it may not
		// name another. The first takes one of the client's own slots.
		switch bound, fresh := pc.bind(t); {
		case bound != t:
			t, why = nil, fmt.Sprintf(reasonAuthSwitch, bound.client.Name, t.client.Name)
		case fresh:
			if pc.clientSlot, why = p.admit(t, pc, ProtocolHTTP); pc.clientSlot == nil {
				writeReason(w, http.StatusServiceUnavailable, why, true)
				return
			}
		}
	}
	if t == nil {
		proto := ProtocolHTTP
		if r.Method == http.MethodConnect {
			proto = ProtocolConnect
		}
		p.reject(rejectAuth, proto, r.RemoteAddr, redactUserinfo(r.Method+" "+r.RequestURI), why)
		w.Header().Set("Proxy-Authenticate", proxyAuthenticate)
		writeReason(w, http.StatusProxyAuthRequired, reasonAuthClient, true)
		return
	}
	r.Header.Del("Proxy-Authorization")
	t.p.serveRequest(w, r)
}

// serveRequest serves one HTTP request of a client.
func (p *Proxy) serveRequest(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.serveConnect(w, r)
	case r.URL.IsAbs():
		p.serveForward(w, r)
	default:
		p.reject(rejectHTTP, ProtocolHTTP, r.RemoteAddr, r.Method+" "+r.RequestURI, reasonNotProxy)
		writeReason(w, http.StatusBadRequest, reasonNotProxy, false)
	}
}

// failHTTP answers an upstream failure after an allow.
func failHTTP(w http.ResponseWriter, err error, closeConn bool) {
	writeReason(w, failStatus(err), reasonFailed+err.Error(), closeConn)
}

// failStatus is the status of an upstream failure: 502, 503 when the
// proxy is at its tunnel limit (or cannot record), 504 on a timeout.
func failStatus(err error) int {
	switch classify(err) {
	case failCapacity:
		return http.StatusServiceUnavailable
	case failTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// writeReason writes a plain-text response carrying reason in its body
// and in the X-Airlock-Reason header.
func writeReason(w http.ResponseWriter, status int, reason string, closeConn bool) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(ReasonHeader, reason)
	if closeConn {
		h.Set("Connection", "close")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "airlock: "+reason+"\n")
}
