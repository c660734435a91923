package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
)

// ReasonHeader carries the reason of every refusal and failure the proxy
// answers over HTTP.
const ReasonHeader = "X-Airlock-Reason"

// reasonNotProxy answers a request that is neither CONNECT nor absolute-form.
const reasonNotProxy = "not a proxy request: send CONNECT host:port or an absolute-form URL (http://host/path)"

// connectEstablished is the reply that turns a CONNECT into a tunnel.
const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// connectMethod starts a CONNECT request line.
const connectMethod = "CONNECT "

// serveInlineConnect serves a connection whose first request is CONNECT,
// without the http.Server: the request is parsed by net/http's parser in
// the connection's own goroutine, and the tunnel starts from there. (The
// server's per-connection machinery, its background read and the hijack
// cost several goroutine hand-offs per tunnel.) A CONNECT later on a
// keep-alive connection goes through serveConnect instead.
func (p *Proxy) serveInlineConnect(c net.Conn, br *bufio.Reader, lr *io.LimitedReader) {
	req, err := http.ReadRequest(br)
	if err != nil {
		status, reason := http.StatusBadRequest, "malformed CONNECT request"
		if lr.N <= 0 {
			status, reason = http.StatusRequestHeaderFieldsTooLarge, "request header too large"
		}
		p.forget(c)
		writeRaw(c, status, reason)
		return
	}
	ev := p.newEvent(ProtocolConnect, c.RemoteAddr().String(), req.Host)
	ev.Decision, ev.Target = p.gate.CheckHostPort(p.task, req.Host, 0)
	up, err := p.open(p.ctx, &ev)
	switch {
	case !ev.Decision.Allowed():
		p.forget(c)
		writeRaw(c, http.StatusForbidden, ev.Decision.Why())
		return
	case err != nil:
		p.finish(&ev, err)
		p.forget(c)
		writeRaw(c, failStatus(err), reasonFailed+err.Error())
		return
	}
	defer p.release()
	if !p.track(c, up) {
		up.Close()
		p.finish(&ev, ErrClosed)
		writeRaw(c, http.StatusServiceUnavailable, "the proxy is shutting down")
		return
	}
	defer p.untrack(c, up)
	_ = c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, connectEstablished); err != nil {
		c.Close()
		up.Close()
		p.finish(&ev, err)
		return
	}
	p.finish(&ev, p.tunnel(&ev, c, buffered(br), up))
}

// writeRaw answers a connection that no http.Server serves with reason
// (in the body and in X-Airlock-Reason), then closes it.
func writeRaw(c net.Conn, status int, reason string) {
	body := "airlock: " + reason + "\n"
	resp := &http.Response{
		StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Close: true,
		Header: http.Header{
			"Content-Type":           {"text/plain; charset=utf-8"},
			"X-Content-Type-Options": {"nosniff"},
			ReasonHeader:             {reason},
		},
		ContentLength: int64(len(body)),
		Body:          io.NopCloser(strings.NewReader(body)),
	}
	_ = resp.Write(c)
	lingerClose(c)
}

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
	if pc, ok := conn.(*prefixConn); ok && len(pc.prefix) == 0 {
		conn = pc.Conn // the replayed bytes are long read: splice again
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
