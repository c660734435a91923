package proxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
)

// TestConnectTunnel opens a CONNECT tunnel to an allowlisted
// "svc.test:PORT" entry and checks the closed event.
func TestConnectTunnel(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	entry := up.hostPort("svc.test")
	h := newHarness(t, setup{allow: []string{entry}, answers: map[string][]netip.Addr{"svc.test": addrs(standIn("127.0.0.1"))}})
	resp, c := connect(t, h.addr, entry)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	exchange(t, c, "hello")
	exchange(t, c, strings.Repeat("x", 1<<20))
	c.Close()
	ev := h.events.wait(t, StageClosed, 1)[0]
	n := int64(len("hello") + 1<<20)
	if ev.Protocol != ProtocolConnect || ev.Requested != entry || ev.Dialled.String() != up.hostPort(standIn("127.0.0.1")) ||
		ev.BytesUp != n || ev.BytesDown != n || ev.Duration <= 0 || ev.Decision.Rule != entry {
		t.Errorf("closed event %+v", ev)
	}
	// Another port of the same host is not allowed: the entry names a port.
	resp, _ = connect(t, h.addr, "svc.test:1")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT to an unlisted port: status %d", resp.StatusCode)
	}
}

// TestConnectEarlyData sends the CONNECT request and the first tunnel
// bytes in one write, as TLS clients often do: the bytes the HTTP server
// read along with the request must reach the upstream first.
func TestConnectEarlyData(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	c := dialProxy(t, h.addr)
	target := up.hostPort("127.0.0.1")
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nearly bytes", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	got := make([]byte, len("early bytes"))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "early bytes" {
		t.Fatalf("early data echoed as %q, %v", got, err)
	}
	exchange(t, &bufConn{Conn: c, r: br}, "later")
}

// TestSOCKS5Tunnels connects over SOCKS5 with a domain name, an IPv4
// address and an IPv6 address, each to an allowlisted loopback upstream.
func TestSOCKS5Tunnels(t *testing.T) {
	up4 := serveUpstream(t, "127.0.0.1:0", echo)
	up6 := serveUpstream(t, "[::1]:0", echo)
	h := newHarness(t, setup{
		allow:   []string{"svc.test", up4.hostPort("127.0.0.1"), up6.hostPort("::1")},
		answers: map[string][]netip.Addr{"svc.test": addrs(standIn("127.0.0.1"))},
	})
	byName := netip.MustParseAddrPort(up4.hostPort(standIn("127.0.0.1")))
	cases := []struct {
		name    string
		atyp    byte
		host    string
		up      *upstream
		dialled netip.AddrPort
	}{
		{"domain", atypDomain, "svc.test", up4, byName},
		{"domain-mixed-case-dot", atypDomain, "SVC.Test.", up4, byName},
		{"ipv4", atypIPv4, "127.0.0.1", up4, up4.ap},
		{"ipv6", atypIPv6, "::1", up6, up6.ap},
		{"ipv6-as-domain", atypDomain, "[::1]", up6, up6.ap},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, conn := socksDial(t, h.addr, c.atyp, c.host, c.up.port())
			if rep != repSucceeded {
				t.Fatalf("reply %d", rep)
			}
			exchange(t, conn, "over socks "+c.name)
			conn.Close()
			ev := h.events.wait(t, StageClosed, i+1)[i]
			if ev.Protocol != ProtocolSOCKS5 || ev.Dialled != c.dialled || !ev.Decision.Allowed() {
				t.Errorf("closed event %+v", ev)
			}
		})
	}
}

// TestSOCKS5EarlyData sends greeting, request and data in one write.
func TestSOCKS5EarlyData(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	c := dialProxy(t, h.addr)
	msg := []byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1}
	msg = binary.BigEndian.AppendUint16(msg, up.port())
	msg = append(msg, "early"...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if rep := readSOCKSReply(t, c); rep != repSucceeded {
		t.Fatalf("reply %d", rep)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "early" {
		t.Fatalf("early data echoed as %q, %v", got, err)
	}
}

// TestSOCKS5Refusals covers what the SOCKS5 side refuses by itself.
func TestSOCKS5Refusals(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	port := binary.BigEndian.AppendUint16(nil, up.port())
	request := func(cmd, atyp byte, addr []byte) []byte {
		b := append([]byte{5, 1, 0, 5, cmd, 0, atyp}, addr...)
		return append(b, port...)
	}
	cases := []struct {
		name   string
		send   []byte
		want   []byte // exact bytes expected back before the close
		reason string // the decided event's reason, when there is one
	}{
		{"bind", request(socksBind, atypIPv4, []byte{127, 0, 0, 1}),
			[]byte{5, 0, 5, repCommandNotSupported, 0, 1, 0, 0, 0, 0, 0, 0}, "SOCKS5 BIND is not supported"},
		{"udp-associate", request(socksUDPAssociate, atypIPv4, []byte{127, 0, 0, 1}),
			[]byte{5, 0, 5, repCommandNotSupported, 0, 1, 0, 0, 0, 0, 0, 0}, "SOCKS5 UDP ASSOCIATE is not supported"},
		{"address-type", request(socksConnect, 9, nil),
			[]byte{5, 0, 5, repAddressTypeNotSupported, 0, 1, 0, 0, 0, 0, 0, 0}, ""},
		{"request-version", []byte{5, 1, 0, 4, 1, 0, 1, 127, 0, 0, 1, 0, 80},
			[]byte{5, 0, 5, repGeneralFailure, 0, 1, 0, 0, 0, 0, 0, 0}, ""},
		{"password-only", []byte{5, 1, 2}, []byte{5, 0xff}, ""},
		{"no-methods", []byte{5, 0}, []byte{}, ""},
		{"socks4", []byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, []byte{0, 91, 0, 0, 0, 0, 0, 0}, ""},
		{"empty-domain", request(socksConnect, atypDomain, []byte{0}),
			[]byte{5, 0, 5, repNotAllowed, 0, 1, 0, 0, 0, 0, 0, 0}, "is malformed (empty host)"},
		{"metadata-ipv4", request(socksConnect, atypIPv4, []byte{169, 254, 169, 254}),
			[]byte{5, 0, 5, repNotAllowed, 0, 1, 0, 0, 0, 0, 0, 0}, "always blocked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(h.events.stage(StageDecided))
			conn := dialProxy(t, h.addr)
			if _, err := conn.Write(c.send); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if string(got) != string(c.want) {
				t.Fatalf("got % x, want % x", got, c.want)
			}
			if c.reason == "" {
				return
			}
			ev := h.events.wait(t, StageDecided, before+1)[before]
			if ev.Decision.Verdict != decision.Deny || !strings.Contains(ev.Decision.Reason, c.reason) {
				t.Errorf("decision %v, want deny with %q", ev.Decision, c.reason)
			}
		})
	}
	if d := h.dials.dialled(); len(d) != 0 {
		t.Errorf("refused requests dialled %v", d)
	}
}

// TestIPLiteralSpellings asks for loopback and metadata addresses in the
// spellings a resolver accepts: the gate normalises them, nothing is
// looked up, and what is dialled is the address itself.
func TestIPLiteralSpellings(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1"), "*"}})
	for _, host := range []string{"127.0.0.1", "0x7f.1", "2130706433", "0177.0.0.1", "127.1", "0x7f000001", "::ffff:127.0.0.1", "::ffff:7f00:1", "127.0.0.1."} {
		resp, c := connect(t, h.addr, up.hostPort(host))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("CONNECT %s: status %d (%s)", host, resp.StatusCode, resp.Header.Get(ReasonHeader))
			continue
		}
		exchange(t, c, host)
		c.Close()
	}
	for _, host := range []string{"169.254.169.254", "0xa9fea9fe", "2852039166", "0251.0376.0251.0376", "169.254.43518",
		"[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]", "169.254.169.254.", "[fd00:ec2::254]"} {
		resp, _ := connect(t, h.addr, net.JoinHostPort(strings.Trim(host, "[]"), "80"))
		if r := resp.Header.Get(ReasonHeader); resp.StatusCode != http.StatusForbidden || !strings.Contains(r, "always blocked") {
			t.Errorf("CONNECT %s: status %d reason %q, want 403 always blocked", host, resp.StatusCode, r)
		}
	}
	if l := h.res.names(); len(l) != 0 {
		t.Errorf("IP literals were handed to the resolver: %v", l)
	}
	for _, d := range h.dials.dialled() {
		if d != up.hostPort("127.0.0.1") {
			t.Errorf("dialled %s", d)
		}
	}
	// Under "*" alone, loopback in any spelling stays out of reach.
	w := newHarness(t, setup{allow: []string{"*"}})
	for _, host := range []string{"127.0.0.1", "0x7f.1", "2130706433", "::ffff:127.0.0.1", "::1", "0.0.0.0"} {
		resp, _ := connect(t, w.addr, up.hostPort(host))
		if r := resp.Header.Get(ReasonHeader); resp.StatusCode != http.StatusForbidden || !strings.Contains(r, "is this host's own") {
			t.Errorf("CONNECT %s under *: status %d reason %q", host, resp.StatusCode, r)
		}
	}
	if d := w.dials.dialled(); len(d) != 0 {
		t.Errorf("dialled %v under *", d)
	}
}

// TestLoopRefused refuses a CONNECT to the proxy's own listener even when
// its address is allowlisted, as a literal or through a name.
func TestLoopRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, setup{listener: ln, allow: []string{ln.Addr().String(), "svc.test"},
		answers: map[string][]netip.Addr{"svc.test": addrs("127.0.0.1")}})
	_, port, _ := net.SplitHostPort(h.addr)
	for _, target := range []string{h.addr, "svc.test:" + port} {
		resp, _ := connect(t, h.addr, target)
		if r := resp.Header.Get(ReasonHeader); resp.StatusCode != http.StatusForbidden || !strings.Contains(r, "this proxy's own listener") {
			t.Errorf("CONNECT %s: status %d reason %q", target, resp.StatusCode, r)
		}
	}
	if d := h.dials.dialled(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
}
