package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// connectEstablished is the reply that turns a CONNECT into a tunnel.
const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// connectMethod starts a CONNECT request line.
const connectMethod = "CONNECT "

// isGone reports whether a read failed because the client left or its
// handshake timed out (the timeout closes the connection), rather than
// because of what it sent.
func isGone(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// serveInlineConnect serves a connection whose first request is CONNECT,
// without the http.Server: the request is parsed by net/http's parser in
// the connection's own goroutine, and the tunnel starts from there. (The
// server's per-connection machinery, its background read and the hijack
// cost several goroutine hand-offs per tunnel.) A CONNECT later on a
// keep-alive connection goes through serveConnect instead.
func (p *Proxy) serveInlineConnect(c net.Conn, br *bufio.Reader, lr *io.LimitedReader) {
	line := firstLine(br)
	req, err := http.ReadRequest(br)
	if err != nil {
		if expired := p.forget(c); expired || (isGone(err) && lr.N > 0) {
			c.Close() // the client left or timed out mid-request: nothing to answer
			return
		}
		status, reason := http.StatusBadRequest, "malformed CONNECT request"
		why := fmt.Sprintf("malformed CONNECT request refused: %+q", err.Error())
		if lr.N <= 0 {
			status, reason = http.StatusRequestHeaderFieldsTooLarge, "request header too large"
			why = fmt.Sprintf("CONNECT request refused: its header is larger than %d bytes", p.limits.MaxHeaderBytes)
		}
		p.reject(rejectHTTP, ProtocolConnect, c.RemoteAddr().String(), line, why)
		writeRaw(c, status, reason)
		return
	}
	s := p
	if p.gw != nil {
		t, why := p.gw.checkHeader(req.Header)
		if t == nil {
			p.forget(c)
			p.reject(rejectAuth, ProtocolConnect, c.RemoteAddr().String(), line, why)
			writeRawHeader(c, http.StatusProxyAuthRequired, reasonAuthClient, http.Header{"Proxy-Authenticate": {proxyAuthenticate}})
			return
		}
		req.Header.Del("Proxy-Authorization")
		sl, why := p.admit(t, c, ProtocolConnect)
		if sl == nil {
			p.forget(c)
			writeRaw(c, http.StatusServiceUnavailable, why)
			return
		}
		defer sl.release()
		if !p.handOff(c, t.p) {
			c.Close()
			return
		}
		defer t.p.wg.Done()
		s = t.p
	}
	s.connectInline(c, br, req)
}

// connectInline decides, dials and tunnels a CONNECT request read by
// serveInlineConnect.
func (p *Proxy) connectInline(c net.Conn, br *bufio.Reader, req *http.Request) {
	p.requested(c)
	ev := p.newEvent(ProtocolConnect, c.RemoteAddr().String(), redactUserinfo(req.RequestURI))
	p.decideConnect(req, &ev)
	up, err := p.open(p.ctx, &ev)
	switch {
	case !ev.Decision.Allowed():
		p.forget(c)
		writeRaw(c, refusalStatus(&ev), ev.Decision.Why())
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
	p.establish(&ev, c, up, []byte(connectEstablished), buffered(br))
}

// establish answers a decided CONNECT or SOCKS5 request, whose
// connections c and up are tracked, with reply, then tunnels them, and
// untracks them once done.
func (p *Proxy) establish(ev *Event, c, up net.Conn, reply, buffered []byte) {
	defer p.untrack(c, up)
	if _, err := c.Write(reply); err != nil {
		c.Close()
		up.Close()
		p.finish(ev, err)
		return
	}
	p.finish(ev, p.tunnel(ev, c, buffered, up))
}

// decideConnect takes the static decision on a CONNECT request's
// authority, as the client sent it (requestHost), into ev: userinfo in it
// ("a@host:443") is refused as in an absolute-form URL, never silently
// dropped.
func (p *Proxy) decideConnect(r *http.Request, ev *Event) {
	host, ok := requestHost(r)
	switch {
	case !ok:
		ev.Decision = deny(reasonNotAuthority, host)
	case r.URL != nil && r.URL.User != nil:
		ev.Decision = deny(reasonUserinfo, r.Host) // the credentials are not repeated
	default:
		ev.Decision, ev.Target = p.gate.CheckHostPort(p.task, host, 0)
	}
}

// serveConnect serves a CONNECT request: decide, dial, then tunnel.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	ev := p.newEvent(ProtocolConnect, r.RemoteAddr, redactUserinfo(r.RequestURI))
	p.decideConnect(r, &ev)
	up, err := p.open(r.Context(), &ev)
	switch {
	case !ev.Decision.Allowed():
		// Close after a refused CONNECT: the client may already have sent
		// bytes meant for the tunnel, which must not be read as a request.
		writeReason(w, refusalStatus(&ev), ev.Decision.Why(), true)
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
	if pc, ok := conn.(*prefixConn); ok {
		// The server no longer owns the connection: its slot is given
		// back when the tunnel ends.
		defer pc.release()
		if len(pc.prefix) == 0 {
			conn = pc.Conn // the replayed bytes are long read: splice again
		}
	}
	if !p.track(conn, up) {
		conn.Close()
		up.Close()
		p.finish(&ev, ErrClosed)
		return
	}
	p.establish(&ev, conn, up, []byte(connectEstablished), buffered(brw.Reader))
}
