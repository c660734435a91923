package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
)

// What the first bytes of a tunnel are.
type firstKind uint8

const (
	firstOther firstKind = iota // anything else, or nothing before the client ended
	firstTLS                    // a TLS ClientHello
	firstHTTP                   // an HTTP request line
)

// maxHello bounds the ClientHello the proxy reads to learn its name.
const maxHello = 32 << 10

// first is the start of what a client sent into a tunnel.
type first struct {
	kind firstKind
	sni  string // a ClientHello's server name, as sent
	data []byte // every byte read, to be passed on
}

// sniff reads the start of what the client sends into a tunnel (after
// prefix, what was read along with its request) until it knows what it
// is: a TLS ClientHello, read whole through crypto/tls's own parser for
// its server name; an HTTP request line; or other bytes. It reads no more
// than it needs, so that a protocol in which the server speaks first is
// not held up by the client's silence.
func sniff(c net.Conn, prefix []byte) (first, error) {
	f := first{data: prefix}
	for {
		switch kind, sure := sniffKind(f.data); {
		case sure && kind == firstTLS:
			return readHello(c, f.data)
		case sure:
			f.kind = kind
			return f, nil
		}
		buf := make([]byte, 2048)
		n, err := c.Read(buf)
		f.data = append(f.data, buf[:n]...)
		if err != nil {
			return f, err // the client ended (or broke) before it was clear
		}
	}
}

// sniffKind says what b, the start of a stream, is, and whether it is
// sure. Leading empty lines are skipped, as HTTP servers skip them; past
// maxSniff bytes it is sure.
func sniffKind(b []byte) (firstKind, bool) {
	if len(b) > maxSniff {
		return firstOther, true
	}
	if len(b) > 0 && b[0] == 0x16 { // a TLS handshake record
		if len(b) < 2 {
			return firstOther, false
		}
		if b[1] == 3 {
			return firstTLS, true
		}
		return firstOther, true
	}
	for i, c := range bytes.TrimLeft(b, "\r\n") {
		switch {
		case c == ' ' && i > 0:
			return firstHTTP, true
		case c < 'A' || c > 'Z' || i >= 20:
			return firstOther, true
		}
	}
	return firstOther, false
}

// maxSniff bounds what sniff reads before it is sure.
const maxSniff = 4096

// helloConn reads r (what was read so far, then the client, recorded);
// it discards what crypto/tls writes back.
type helloConn struct {
	net.Conn
	r io.Reader
}

func (c *helloConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *helloConn) Write(b []byte) (int, error) { return len(b), nil }

// errHelloRead stops the handshake once the ClientHello is read.
var errHelloRead = errors.New("client hello read")

// readHello reads a whole ClientHello with crypto/tls's server parser,
// which stops at it: its server name, and every byte read to pass on.
func readHello(c net.Conn, prefix []byte) (first, error) {
	rec := bytes.NewBuffer(bytes.Clone(prefix))
	src := io.MultiReader(bytes.NewReader(prefix), io.TeeReader(io.LimitReader(c, maxHello-int64(len(prefix))), rec))
	f := first{kind: firstTLS}
	var got bool
	cfg := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		f.sni, got = h.ServerName, true
		return nil, errHelloRead
	}}
	err := tls.Server(&helloConn{Conn: c, r: src}, cfg).HandshakeContext(context.Background())
	f.data = rec.Bytes()
	if got {
		return f, nil
	}
	if len(f.data) >= maxHello {
		return f, fmt.Errorf("its TLS ClientHello is larger than %d bytes", maxHello)
	}
	return f, fmt.Errorf("it opened with a malformed TLS ClientHello: %w", err)
}

// Why a tunnel is refused for what it carries, each a fixed sentence.
const (
	reasonSNI       = "tunnel to %s refused: its TLS ClientHello names %+q (SNI), another host than the tunnel's (domain fronting)"
	reasonSNIIP     = "tunnel to %s refused: its TLS ClientHello names %+q (SNI), but the tunnel is to an address: ask for the host by name"
	reasonHostHdr   = "request in the tunnel to %s refused: it names host %+q, another host than the tunnel's (domain fronting)"
	reasonNeedTLS   = "tunnel to %s refused: it must carry TLS (%s), and its first bytes are not a TLS ClientHello"
	reasonNeedHTTP  = "tunnel to %s refused: it must carry plain HTTP requests (%s), and its first bytes are not one"
	reasonInspected = "tunnel to %s refused: the entry is inspected, so it must carry HTTP or TLS, and its first bytes are neither"
	reasonBadHello  = "tunnel to %s refused: %v"
	reasonNoCA      = "tunnel to %s refused: the entry is inspected, and this proxy has no CA to inspect it with"
)

// protocolOf is the protocol a tunnel to t must carry under entry e, with
// why, for reasons.
func protocolOf(e *egress.Entry, t egress.Target) (egress.Protocol, string) {
	switch p := e.Protocol(); {
	case p != egress.ProtocolAuto:
		return p, fmt.Sprintf("its entry's protocol is %q", p)
	case t.Port == 443:
		return egress.ProtocolTLS, "port 443"
	}
	return egress.ProtocolAuto, ""
}

// consistent checks the first bytes of a tunnel to t against what its
// entry allows, and returns why they are refused ("" when they are not):
// the protocol the entry requires, and the host a ClientHello names.
func consistent(e *egress.Entry, t egress.Target, f first) string {
	proto, why := protocolOf(e, t)
	switch {
	case proto == egress.ProtocolTLS && f.kind != firstTLS:
		return fmt.Sprintf(reasonNeedTLS, t, why)
	case proto == egress.ProtocolHTTP && f.kind != firstHTTP:
		return fmt.Sprintf(reasonNeedHTTP, t, why)
	case f.kind == firstTLS:
		return sniMismatch(t, f.sni)
	}
	return ""
}

// sniMismatch says why a ClientHello naming sni may not go to t, "" when
// it may: no name, or t's name (normalised as the gate normalises it).
func sniMismatch(t egress.Target, sni string) string {
	if sni == "" {
		return ""
	}
	n, err := egress.ParseTarget(sni, t.Port)
	switch {
	case err == nil && t.Name != "" && n.Name == t.Name:
		return ""
	case err == nil && t.IsIP() && n.IsIP() && n.Addr == t.Addr:
		return ""
	case t.IsIP():
		return fmt.Sprintf(reasonSNIIP, t, sni)
	}
	return fmt.Sprintf(reasonSNI, t, sni)
}

// hostMismatch says why an HTTP request naming host (its Host header, or
// its absolute URL's authority) may not go to t through a tunnel, ""
// when it may: the same host, and the same port when it names one.
func hostMismatch(t egress.Target, host string) string {
	n, err := egress.SplitHostPort(host, 0)
	if err == nil && n.Name == t.Name && n.Addr == t.Addr && (n.Port == 0 || n.Port == t.Port) {
		return ""
	}
	return fmt.Sprintf(reasonHostHdr, t, host)
}

// tlsAccessDenied is a fatal TLS alert, access_denied: what a client that
// sent a refused ClientHello reads instead of a ServerHello.
var tlsAccessDenied = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31}

// refuseTunnel answers a client whose tunnel is refused for what it
// carries, as well as its protocol allows: a TLS alert, a 403, or
// nothing; the caller closes the tunnel.
func refuseTunnel(c net.Conn, kind firstKind, reason string) {
	_ = c.SetWriteDeadline(time.Now().Add(lingerTime))
	switch kind {
	case firstTLS:
		_, _ = c.Write(tlsAccessDenied)
	case firstHTTP:
		writeRaw(c, 403, reason)
	}
}
