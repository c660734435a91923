package proxy

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
)

// socksFailure maps an upstream failure to its reply code.
func socksFailure(err error) byte {
	switch classify(err) {
	case failCapacity:
		return repGeneralFailure
	case failRefused:
		return repConnectionRefused
	case failNetwork:
		return repNetworkUnreachable
	}
	return repHostUnreachable
}

// refuseSOCKS4 answers a SOCKS4 client "request rejected".
func refuseSOCKS4(c net.Conn) {
	_, _ = c.Write([]byte{0, 91, 0, 0, 0, 0, 0, 0})
	lingerClose(c)
}

// serveSOCKS serves one SOCKS5 connection whose first byte is 0x05. br
// reads c; what the client sent ahead of the proxy's replies is relayed
// before the tunnel copies the bare connection.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	req, ok := p.socksHandshake(c, br)
	if !ok {
		p.forget(c)
		lingerClose(c)
		return
	}
	p.requested(c)
	ev := p.newEvent(ProtocolSOCKS5, c.RemoteAddr().String(), req.requested())
	if req.cmd != socksConnect {
		ev.Decision = deny(reasonSOCKSCommand, ev.Requested, socksCommandName(req.cmd))
		_ = p.emit(ev)
		p.refuseSOCKS(c, repCommandNotSupported)
		return
	}
	ev.Decision, ev.Target = p.gate.CheckHost(p.task, req.host, req.port)
	p.connectSOCKS(c, br, &ev)
}

// socksHandshake reads the greeting and the request, answering the
// method choice and any malformed request.
func (p *Proxy) socksHandshake(c net.Conn, br *bufio.Reader) (socksRequest, bool) {
	noAuth, err := readGreeting(br)
	if err != nil {
		return socksRequest{}, false
	}
	if !noAuth {
		_, _ = c.Write([]byte{socks5Version, socksNoAcceptable})
		return socksRequest{}, false
	}
	if _, err := c.Write([]byte{socks5Version, socksNoAuth}); err != nil {
		return socksRequest{}, false
	}
	req, err := readRequest(br)
	var se *socksError
	if errors.As(err, &se) {
		_, _ = c.Write(socksReply(se.rep, netip.AddrPort{}))
	}
	return req, err == nil
}

// refuseSOCKS sends a failure reply and closes the connection.
func (p *Proxy) refuseSOCKS(c net.Conn, rep byte) {
	_, _ = c.Write(socksReply(rep, netip.AddrPort{}))
	p.forget(c)
	lingerClose(c)
}

// connectSOCKS decides and dials a SOCKS5 CONNECT, then tunnels.
func (p *Proxy) connectSOCKS(c net.Conn, br *bufio.Reader, ev *Event) {
	up, err := p.open(p.ctx, ev)
	switch {
	case !ev.Decision.Allowed():
		p.refuseSOCKS(c, repNotAllowed)
		return
	case err != nil:
		p.finish(ev, err)
		p.refuseSOCKS(c, socksFailure(err))
		return
	}
	if !p.track(c, up) {
		up.Close()
		p.finish(ev, ErrClosed)
		p.refuseSOCKS(c, repGeneralFailure)
		return
	}
	defer p.untrack(c, up)
	// The bound address is left zero: clients ignore it, and the proxy's
	// own address on the host is not the sandbox's business.
	if _, err := c.Write(socksReply(repSucceeded, netip.AddrPort{})); err != nil {
		c.Close()
		up.Close()
		p.finish(ev, err)
		return
	}
	p.finish(ev, p.tunnel(ev, c, buffered(br), up))
}
