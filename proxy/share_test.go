package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// dialFrom connects to the proxy from the loopback address local, so that
// a test has several clients.
func dialFrom(t testing.TB, proxyAddr, local string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connectFrom sends CONNECT target from local and returns the status and
// the reason header.
func connectFrom(t testing.TB, proxyAddr, local, target string) (int, string, net.Conn) {
	t.Helper()
	c := dialFrom(t, proxyAddr, local)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return 0, err.Error(), c
	}
	_ = c.SetReadDeadline(time.Time{})
	return resp.StatusCode, resp.Header.Get(ReasonHeader), c
}

// TestTunnelFairShare is finding 13 of issue 11: client A opens tunnels
// until it is refused; client B still gets through, and so does A again
// once one of its tunnels closes.
func TestTunnelFairShare(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}, limits: Limits{MaxTunnels: 8}})
	target := up.hostPort("127.0.0.1")
	var held []net.Conn
	for {
		status, reason, c := connectFrom(t, h.addr, "127.0.0.1", target)
		if status == http.StatusOK {
			held = append(held, c)
			if len(held) > 8 {
				t.Fatal("client A got more tunnels than the proxy's whole limit")
			}
			continue
		}
		if status != http.StatusServiceUnavailable || !strings.Contains(reason, "client 127.0.0.1 is at its share (2) of the proxy's limit of 8 concurrent tunnels") {
			t.Fatalf("client A refused with %d %q", status, reason)
		}
		break
	}
	if len(held) != 2 {
		t.Fatalf("client A held %d tunnels, want its share of 2", len(held))
	}
	for _, b := range []string{"127.0.0.2", "127.0.0.3"} {
		status, reason, c := connectFrom(t, h.addr, b, target)
		if status != http.StatusOK {
			t.Fatalf("client %s, with A at its share: %d %q", b, status, reason)
		}
		exchange(t, c, "through")
	}
	held[0].Close()
	a := clientOf("127.0.0.1:1")
	waitFor(t, "A's closed tunnel given back", func() bool { _, n := h.p.tunnelShare.counts(a); return n < 2 })
	status, reason, c := connectFrom(t, h.addr, "127.0.0.1", target)
	if status != http.StatusOK {
		t.Fatalf("client A, after closing one of its tunnels: %d %q", status, reason)
	}
	exchange(t, c, "again")
}

// TestConnectionFairShare: client A holds every connection it may (each
// sending a request slowly, never finishing); one more from A is closed
// at once, client B still gets through, and the refusal is recorded.
func TestConnectionFairShare(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}, limits: Limits{MaxConns: 16}})
	for range 4 { // A's share: a quarter of 16
		c := dialFrom(t, h.addr, "127.0.0.1")
		io.WriteString(c, "CONNECT ") // accepted (TCP_DEFER_ACCEPT) and held
	}
	// Each of A's connections is accepted once its first bytes arrive;
	// wait until the proxy holds all four.
	a := clientOf("127.0.0.1:1")
	deadline := time.Now().Add(10 * time.Second)
	for _, n := h.p.connShare.counts(a); n < 4; _, n = h.p.connShare.counts(a) {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy holds %d of A's connections, want 4", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	extra := dialFrom(t, h.addr, "127.0.0.1")
	io.WriteString(extra, "CONNECT "+up.hostPort("127.0.0.1")+" HTTP/1.1\r\n\r\n")
	wantEOF(t, extra, 10*time.Second)
	status, reason, c := connectFrom(t, h.addr, "127.0.0.2", up.hostPort("127.0.0.1"))
	if status != http.StatusOK {
		t.Fatalf("client B, with A at its share: %d %q", status, reason)
	}
	exchange(t, c, "through")
	ev := h.events.wait(t, StageRejected, 1)[0]
	if ev.Protocol != ProtocolUnknown || ev.Count != 1 || !strings.HasPrefix(ev.Client, "127.0.0.1:") ||
		ev.Decision.Reason != "connection refused as soon as it was accepted: client 127.0.0.1 is at its share (4) of the proxy's limit of 16 connections" {
		t.Errorf("rejected event %+v", ev)
	}
}

// TestConnectionLimitHolds: the proxy as a whole never holds more
// connections than MaxConns, however many clients ask, and gives every
// slot back when they leave.
func TestConnectionLimitHolds(t *testing.T) {
	h := newHarness(t, setup{allow: []string{"127.0.0.1:9"}, limits: Limits{MaxConns: 8, MaxConnsPerClient: 8}})
	var conns []net.Conn
	for i := range 40 {
		c := dialFrom(t, h.addr, fmt.Sprintf("127.0.0.%d", 1+i%4))
		io.WriteString(c, "GET ")
		conns = append(conns, c)
	}
	time.Sleep(200 * time.Millisecond)
	if n, _ := h.p.connShare.counts(client{}); n > 8 {
		t.Fatalf("the proxy holds %d connections, its limit is 8", n)
	}
	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := h.p.connShare.counts(client{}); n != 0; n, _ = h.p.connShare.counts(client{}) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connection slots still held after every client left", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClientOf(t *testing.T) {
	for remote, want := range map[string]string{
		"127.0.0.1:5000":            "127.0.0.1",
		"[::ffff:10.0.0.1]:80":      "10.0.0.1",
		"[2001:db8:1:2:3:4:5:6]:80": "2001:db8:1:2::/64",
		"[2001:db8:1:2::9]:81":      "2001:db8:1:2::/64",
		"@":                         "local socket clients",
		"":                          "local socket clients",
	} {
		if got := clientOf(remote).String(); got != want {
			t.Errorf("clientOf(%q) = %s, want %s", remote, got, want)
		}
	}
}

// counts returns how many s holds in all, and for c.
func (s *share) counts(c client) (total, ofClient int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, s.per[c]
}
