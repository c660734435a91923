package proxy

// SOCKS5 (RFC 1928) is written by hand: the server side is a few dozen
// lines, the library in golang.org/x/net is client-only and internal, and
// the proxy needs the parsed request before anything is dialled, so that
// the egress gate decides on it.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// SOCKS protocol constants (RFC 1928).
const (
	socks4Version = 0x04
	socks5Version = 0x05

	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff

	socksConnect      = 0x01
	socksBind         = 0x02
	socksUDPAssociate = 0x03

	atypIPv4   = 0x01
	atypDomain = 0x03
	atypIPv6   = 0x04
)

// SOCKS5 reply codes (RFC 1928, section 6).
const (
	repSucceeded               = 0x00
	repGeneralFailure          = 0x01
	repNotAllowed              = 0x02
	repNetworkUnreachable      = 0x03
	repHostUnreachable         = 0x04
	repConnectionRefused       = 0x05
	repCommandNotSupported     = 0x07
	repAddressTypeNotSupported = 0x08
)

// reasonSOCKSCommand refuses BIND, UDP ASSOCIATE and unknown commands.
const reasonSOCKSCommand = "egress to %q refused: SOCKS5 %s is not supported (only CONNECT)"

// socksRequest is a parsed SOCKS5 request.
type socksRequest struct {
	cmd  byte
	host string // the domain as sent, or the address in text form
	port uint16
}

// requested renders the destination as the client asked for it.
func (r socksRequest) requested() string {
	return net.JoinHostPort(r.host, strconv.Itoa(int(r.port)))
}

// socksError is a malformed request, answered with reply rep.
type socksError struct {
	rep byte
	msg string
}

func (e *socksError) Error() string { return "socks5: " + e.msg }

// readGreeting reads a client's greeting (version 5 already peeked, not
// consumed) and reports whether it offers "no authentication", the only
// method the proxy accepts.
func readGreeting(r io.Reader) (noAuth bool, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, fmt.Errorf("socks5: reading greeting: %w", err)
	}
	if h[0] != socks5Version {
		return false, fmt.Errorf("socks5: greeting has version %d", h[0])
	}
	if h[1] == 0 {
		return false, errors.New("socks5: greeting offers no methods")
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, fmt.Errorf("socks5: reading methods: %w", err)
	}
	return bytes.IndexByte(methods, socksNoAuth) >= 0, nil
}

// readRequest reads a SOCKS5 request. A *socksError names the reply the
// client should get; any other error means the client went away.
func readRequest(r io.Reader) (socksRequest, error) {
	var req socksRequest
	var h [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return req, fmt.Errorf("socks5: reading request: %w", err)
	}
	if h[0] != socks5Version {
		return req, &socksError{repGeneralFailure, fmt.Sprintf("request has version %d", h[0])}
	}
	req.cmd = h[1]
	switch h[3] {
	case atypIPv4, atypIPv6:
		b := make([]byte, 4)
		if h[3] == atypIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(r, b); err != nil {
			return req, fmt.Errorf("socks5: reading address: %w", err)
		}
		a, _ := netip.AddrFromSlice(b)
		req.host = a.String()
	case atypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return req, fmt.Errorf("socks5: reading name length: %w", err)
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return req, fmt.Errorf("socks5: reading name: %w", err)
		}
		req.host = string(b)
	default:
		return req, &socksError{repAddressTypeNotSupported, fmt.Sprintf("address type %d", h[3])}
	}
	var port [2]byte
	if _, err := io.ReadFull(r, port[:]); err != nil {
		return req, fmt.Errorf("socks5: reading port: %w", err)
	}
	req.port = binary.BigEndian.Uint16(port[:])
	return req, nil
}

// socksReply encodes a reply carrying the bound address.
func socksReply(rep byte, bound netip.AddrPort) []byte {
	a := bound.Addr().Unmap()
	b := []byte{socks5Version, rep, 0}
	switch {
	case a.Is4():
		b = append(b, atypIPv4)
	case a.Is6():
		b = append(b, atypIPv6)
	default:
		a = netip.IPv4Unspecified()
		b = append(b, atypIPv4)
	}
	b = append(b, a.AsSlice()...)
	return binary.BigEndian.AppendUint16(b, bound.Port())
}

// socksCommandName names a SOCKS5 command for reasons.
func socksCommandName(cmd byte) string {
	switch cmd {
	case socksBind:
		return "BIND"
	case socksUDPAssociate:
		return "UDP ASSOCIATE"
	}
	return fmt.Sprintf("command %d", cmd)
}

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

// lingerClose closes c after a refusal without losing the reply: closing
// a socket with unread input sends a reset, which may reach the client
// before it has read the reply. It half-closes, discards what the client
// still sends for a moment, then closes.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_ = c.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
	c.Close()
}

// lingerTime bounds how long lingerClose waits for the client.
const lingerTime = 500 * time.Millisecond

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
	defer p.release()
	if !p.track(c, up) {
		up.Close()
		p.finish(ev, ErrClosed)
		p.refuseSOCKS(c, repGeneralFailure)
		return
	}
	defer p.untrack(c, up)
	_ = c.SetDeadline(time.Time{})
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

// buffered returns a copy of what br has read ahead.
func buffered(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return bytes.Clone(b)
}
