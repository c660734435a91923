package proxy

import (
	"fmt"
	"io"
	"net/http"

	"github.com/airlock-sandbox/airlock/decision"
)

// ReasonHeader carries the reason of every refusal and failure the proxy
// answers over HTTP.
const ReasonHeader = "X-Airlock-Reason"

// reasonNotProxy answers a request that is neither CONNECT nor absolute-form.
const reasonNotProxy = "not a proxy request: send CONNECT host:port or an absolute-form URL (http://host/path)"

// connectEstablished is the reply that turns a CONNECT into a tunnel.
const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// serveHTTP serves one HTTP request on a connection sniffed as HTTP.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.serveConnect(w, r)
	case r.URL.IsAbs():
		p.serveForward(w, r)
	default:
		writeReason(w, http.StatusBadRequest, reasonNotProxy, false)
	}
}

// serveConnect serves a CONNECT request: decide, dial, then tunnel.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	ev := p.newEvent(ProtocolConnect, r.RemoteAddr, r.Host)
	ev.Decision, ev.Target = p.gate.CheckHostPort(p.task, r.Host, 0)
	up, err := p.open(r.Context(), &ev)
	switch {
	case !ev.Decision.Allowed():
		// Close after a refused CONNECT: the client may already have sent
		// bytes meant for the tunnel, which must not be read as a request.
		refuseHTTP(w, ev.Decision, true)
		return
	case err != nil:
		failHTTP(w, err, true)
		p.finish(&ev, err)
		return
	}
	defer p.release()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		p.finish(&ev, fmt.Errorf("taking over the client connection: %w", err))
		return
	}
	if !p.track(conn, up) {
		conn.Close()
		up.Close()
		p.finish(&ev, ErrClosed)
		return
	}
	defer p.untrack(conn, up)
	if _, err := io.WriteString(conn, connectEstablished); err != nil {
		conn.Close()
		up.Close()
		p.finish(&ev, err)
		return
	}
	p.finish(&ev, p.tunnel(&ev, conn, buffered(brw.Reader), up))
}

// refuseHTTP answers a refusal: 403 with the reason.
func refuseHTTP(w http.ResponseWriter, d decision.Decision, closeConn bool) {
	writeReason(w, http.StatusForbidden, d.Why(), closeConn)
}

// failHTTP answers an upstream failure after an allow: 502, 503 when the
// proxy is at its tunnel limit, 504 on a timeout.
func failHTTP(w http.ResponseWriter, err error, closeConn bool) {
	status := http.StatusBadGateway
	switch classify(err) {
	case failCapacity:
		status = http.StatusServiceUnavailable
	case failTimeout:
		status = http.StatusGatewayTimeout
	}
	writeReason(w, status, reasonFailed+err.Error(), closeConn)
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
