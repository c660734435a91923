package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"net"
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
	var ae *authError
	switch {
	case err == nil, errors.As(err, new(*recordedError)):
		return ""
	case errors.As(err, &ae):
		return ae.why
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
// before the tunnel copies the bare connection. At a gateway's front the
// greeting must authenticate a client, whose own proxy then serves the
// request.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	s, sl, err := p.socksGreet(c, br)
	if err != nil {
		p.refuseHandshake(c, err)
		return
	}
	if s != p {
		defer sl.release()
		if !p.handOff(c, s) {
			c.Close()
			return
		}
		defer s.wg.Done()
	}
	s.serveSOCKSRequest(c, br)
}

// refuseHandshake records a refused SOCKS5 handshake (nothing when the
// client went away) and closes c.
func (p *Proxy) refuseHandshake(c net.Conn, err error) {
	p.forget(c)
	if why := socksRefusal(err); why != "" {
		k := rejectSOCKS5
		if errors.As(err, new(*authError)) {
			k = rejectAuth
		}
		p.reject(k, ProtocolSOCKS5, c.RemoteAddr().String(), "", why)
	}
	lingerClose(c)
}

// serveSOCKSRequest reads and serves the request of a SOCKS5 connection
// whose greeting has been answered.
func (p *Proxy) serveSOCKSRequest(c net.Conn, br *bufio.Reader) {
	req, err := readRequest(br)
	var se *socksError
	if errors.As(err, &se) {
		_, _ = c.Write(socksReply(se.rep))
	}
	if err != nil {
		p.refuseHandshake(c, err)
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

// socksGreet reads the greeting and answers the method choice. It
// returns the proxy that serves the request: p, or, at a gateway's front,
// the proxy of the client the username/password (RFC 1929) names, which
// must be offered and must authenticate (anything else is an
// *authError), with the client's hold on its own connections, which the
// caller releases.
func (p *Proxy) socksGreet(c net.Conn, br *bufio.Reader) (*Proxy, *slot, error) {
	method := byte(socksNoAuth)
	if p.gw != nil {
		method = socksUserPass
	}
	offered, err := readGreeting(br, method)
	switch {
	case err != nil:
		return nil, nil, err
	case !offered:
		_, _ = c.Write([]byte{socks5Version, socksNoAcceptable})
		if p.gw != nil {
			return nil, nil, &authError{reasonAuthMethod}
		}
		return nil, nil, errNoAcceptableMethod
	}
	if _, err := c.Write([]byte{socks5Version, method}); err != nil || p.gw == nil {
		return p, nil, err
	}
	user, pass, err := readUserPass(br)
	if errors.Is(err, errUserPass) {
		err = &authError{reasonAuthSOCKS}
	}
	var t *tenant
	if err == nil {
		var why string
		if t, why = p.gw.check(user, pass); t == nil {
			err = &authError{why}
		}
	}
	var sl *slot
	if err == nil {
		var why string
		if sl, why = p.admit(t, c, ProtocolSOCKS5); sl == nil {
			err = &recordedError{why}
		}
	}
	if err != nil {
		_, _ = c.Write([]byte{socksUserPassVersion, 1}) // failure: the client must close
		return nil, nil, err
	}
	if _, err := c.Write([]byte{socksUserPassVersion, 0}); err != nil {
		sl.release()
		return nil, nil, err
	}
	return t.p, sl, nil
}

// refuseSOCKS sends a failure reply and closes the connection.
func (p *Proxy) refuseSOCKS(c net.Conn, rep byte) {
	_, _ = c.Write(socksReply(rep))
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
	p.establish(ev, c, up, socksReply(repSucceeded), buffered(br))
}
