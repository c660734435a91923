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
)

// SOCKS protocol constants (RFC 1928).
const (
	socks4Version = 0x04
	socks5Version = 0x05

	socksNoAuth       = 0x00
	socksUserPass     = 0x02 // RFC 1929
	socksNoAcceptable = 0xff

	socksUserPassVersion = 0x01 // of the RFC 1929 subnegotiation

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

// The greetings the proxy refuses.
var (
	errNoMethods          = errors.New("socks5: greeting offers no methods")
	errNoAcceptableMethod = errors.New("socks5: greeting offers no acceptable method")
)

// socksError is a malformed request, answered with reply rep.
type socksError struct {
	rep byte
	msg string
}

func (e *socksError) Error() string { return "socks5: " + e.msg }

// readGreeting reads a client's greeting (version 5 already peeked, not
// consumed) and reports whether it offers method, the only one the proxy
// accepts: "no authentication", or username/password at a gateway.
func readGreeting(r io.Reader, method byte) (offered bool, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, fmt.Errorf("socks5: reading greeting: %w", err)
	}
	if h[0] != socks5Version {
		return false, fmt.Errorf("socks5: greeting has version %d", h[0])
	}
	if h[1] == 0 {
		return false, errNoMethods
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, fmt.Errorf("socks5: reading methods: %w", err)
	}
	return bytes.IndexByte(methods, method) >= 0, nil
}

// errUserPass is a malformed RFC 1929 request.
var errUserPass = errors.New("socks5: malformed username/password request")

// readUserPass reads an RFC 1929 username/password request: VER (1)
// ULEN UNAME PLEN PASSWD. A wrong version is errUserPass; a short read
// means the client went away.
func readUserPass(r io.Reader) (user, pass string, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", "", fmt.Errorf("socks5: reading username/password: %w", err)
	}
	if h[0] != socksUserPassVersion || h[1] == 0 {
		return "", "", errUserPass
	}
	u := make([]byte, int(h[1])+1) // the name, then PLEN
	if _, err := io.ReadFull(r, u); err != nil {
		return "", "", fmt.Errorf("socks5: reading username: %w", err)
	}
	pw := make([]byte, u[len(u)-1])
	if _, err := io.ReadFull(r, pw); err != nil {
		return "", "", fmt.Errorf("socks5: reading password: %w", err)
	}
	return string(u[:len(u)-1]), string(pw), nil
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

// readSOCKS4 reads a SOCKS4 request (RFC-less: "SOCKS: A protocol for
// TCP proxy across firewalls", and the SOCKS4a extension), the version
// byte 4 peeked, not consumed: VN CD DSTPORT DSTIP USERID NUL, then, when
// DSTIP is 0.0.0.x with x not 0, HOST NUL. It returns the destination as
// host:port, the host as sent (raw bytes); the reader's buffer bounds the
// user id and the host.
func readSOCKS4(br *bufio.Reader) (string, error) {
	var h [8]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return "", fmt.Errorf("socks4: reading request: %w", err)
	}
	port := strconv.Itoa(int(binary.BigEndian.Uint16(h[2:4])))
	host := netip.AddrFrom4([4]byte(h[4:8])).String()
	if _, err := br.ReadSlice(0); err != nil {
		return net.JoinHostPort(host, port), fmt.Errorf("socks4: reading user id: %w", err)
	}
	if h[4] == 0 && h[5] == 0 && h[6] == 0 && h[7] != 0 {
		name, err := br.ReadSlice(0)
		if err != nil {
			return net.JoinHostPort(host, port), fmt.Errorf("socks4a: reading host: %w", err)
		}
		host = string(name[:len(name)-1])
	}
	return net.JoinHostPort(host, port), nil
}

// socksReply encodes a reply. The bound address is left zero (0.0.0.0:0):
// clients ignore it, and the proxy's own address on the host is not the
// sandbox's business.
func socksReply(rep byte) []byte {
	return []byte{socks5Version, rep, 0, atypIPv4, 0, 0, 0, 0, 0, 0}
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
