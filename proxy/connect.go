package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
)

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
	p.requested(c)
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
	if !p.track(c, up) {
		up.Close()
		p.finish(&ev, ErrClosed)
		writeRaw(c, http.StatusServiceUnavailable, "the proxy is shutting down")
		return
	}
	defer p.untrack(c, up)
	if _, err := io.WriteString(c, connectEstablished); err != nil {
		c.Close()
		up.Close()
		p.finish(&ev, err)
		return
	}
	p.finish(&ev, p.tunnel(&ev, c, buffered(br), up))
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
