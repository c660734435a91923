package proxy

import (
	"bufio"
	"errors"
	"fmt"
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

// reasonSOCKS4 refuses every SOCKS4 and SOCKS4a request: the proxy speaks
// SOCKS5 only (simpler than a second protocol under the same gate, and
// every SOCKS4 client also speaks SOCKS5 or HTTP CONNECT).
const reasonSOCKS4 = "SOCKS4 request for %+q refused: SOCKS4 and SOCKS4a are not supported (use SOCKS5 or HTTP CONNECT)"

// serveSOCKS4 reads a SOCKS4 or SOCKS4a request (the version byte 4
// already peeked), answers it "request rejected", and records the
// refusal with the destination it asked for.
func (p *Proxy) serveSOCKS4(c net.Conn, br *bufio.Reader) {
	requested, _ := readSOCKS4(br) // refused either way, and recorded
	p.forget(c)
	p.reject(rejectSOCKS4, ProtocolSOCKS4, c.RemoteAddr().String(), requested, fmt.Sprintf(reasonSOCKS4, requested))
	_, _ = c.Write([]byte{0, 91, 0, 0, 0, 0, 0, 0})
	lingerClose(c)
}

// socksRefusal says why a SOCKS5 handshake is refused, when the client
// sent something the proxy will not serve; "" when it went away.
func socksRefusal(err error) string {
	var se *socksError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return "malformed SOCKS5 request refused: " + se.msg
	case errors.Is(err, errNoAcceptableMethod):
		return "SOCKS5 greeting refused: it offers no method the proxy accepts (only no authentication)"
	case errors.Is(err, errNoMethods):
		return "malformed SOCKS5 greeting refused: it offers no methods"
	}
	return ""
}

// serveSOCKS serves one SOCKS5 connection whose first byte is 0x05. br
// reads c; what the client sent ahead of the proxy's replies is relayed
// before the tunnel copies the bare connection.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	req, err := p.socksHandshake(c, br)
	if err != nil {
		p.forget(c)
		if why := socksRefusal(err); why != "" {
			p.reject(rejectSOCKS5, ProtocolSOCKS5, c.RemoteAddr().String(), "", why)
		}
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
func (p *Proxy) socksHandshake(c net.Conn, br *bufio.Reader) (socksRequest, error) {
	noAuth, err := readGreeting(br)
	if err != nil {
		return socksRequest{}, err
	}
	if !noAuth {
		_, _ = c.Write([]byte{socks5Version, socksNoAcceptable})
		return socksRequest{}, errNoAcceptableMethod
	}
	if _, err := c.Write([]byte{socks5Version, socksNoAuth}); err != nil {
		return socksRequest{}, err
	}
	req, err := readRequest(br)
	var se *socksError
	if errors.As(err, &se) {
		_, _ = c.Write(socksReply(se.rep, netip.AddrPort{}))
	}
	return req, err
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
