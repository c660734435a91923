package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestHandshakeTimeout cuts off clients that never finish their request:
// silent, a partial HTTP request line, a partial header, a bare SOCKS5
// version byte, and a SOCKS5 greeting without a request.
func TestHandshakeTimeout(t *testing.T) {
	h := newHarness(t, setup{allow: []string{"127.0.0.1:9"}, limits: Limits{HandshakeTimeout: 200 * time.Millisecond}})
	for name, send := range map[string]string{
		"silent":         "",
		"partial line":   "CONNECT 127.0.0.1:",
		"partial header": "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n",
		"socks version":  "\x05",
		"socks greeting": "\x05\x01\x00\x05\x01",
	} {
		t.Run(name, func(t *testing.T) {
			c := dialProxy(t, h.addr)
			if _, err := io.WriteString(c, send); err != nil {
				t.Fatal(err)
			}
			wantEOF(t, c, 10*time.Second)
		})
	}
	if evs := h.events.all(); len(evs) != 0 {
		t.Errorf("%d events for requests never made: %+v", len(evs), evs)
	}
}

// TestMaxTunnels refuses a tunnel beyond the limit with 503 and SOCKS5
// reply 1, and accepts one again once a tunnel closes.
func TestMaxTunnels(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}, limits: Limits{MaxTunnels: 2, MaxTunnelsPerClient: 2}})
	target := up.hostPort("127.0.0.1")
	var open []net.Conn
	for range 2 {
		resp, c := connect(t, h.addr, target)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		exchange(t, c, "x")
		open = append(open, c)
	}
	resp, _ := connect(t, h.addr, target)
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(r, "limit of 2 concurrent tunnels") {
		t.Fatalf("third tunnel: status %d reason %q", resp.StatusCode, r)
	}
	if rep, _ := socksDial(t, h.addr, atypIPv4, "127.0.0.1", up.port()); rep != repGeneralFailure {
		t.Fatalf("third SOCKS5 tunnel: reply %d", rep)
	}
	open[0].Close()
	h.events.wait(t, StageClosed, 3) // the closed tunnel and the two refusals
	resp, c := connect(t, h.addr, target)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after a close: status %d", resp.StatusCode)
	}
	exchange(t, c, "y")
}

// TestIdleTimeout cuts a tunnel that carries nothing either way, and
// keeps one that carries a little data regularly, for spliced TCP
// tunnels and for tunnels from a Unix-socket listener (watched in user
// space).
func TestIdleTimeout(t *testing.T) {
	// Generous against a loaded machine: the busy tunnel moves data every
	// 50ms, sixteen times more often than the timeout.
	const idle = 800 * time.Millisecond
	up := serveUpstream(t, "127.0.0.1:0", echo)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			var ln net.Listener
			var err error
			if network == "unix" {
				ln, err = net.Listen("unix", t.TempDir()+"/proxy.sock")
			} else {
				ln, err = net.Listen("tcp", "127.0.0.1:0")
			}
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}, listener: ln, limits: Limits{IdleTimeout: idle}})
			dial := func() net.Conn {
				c, err := net.Dial(network, h.addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				io.WriteString(c, "CONNECT "+up.hostPort("127.0.0.1")+" HTTP/1.1\r\nHost: x\r\n\r\n")
				want := connectEstablished
				got := make([]byte, len(want))
				if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
					t.Fatalf("CONNECT reply %q, %v", got, err)
				}
				return c
			}
			quiet, busy := dial(), dial()
			start := time.Now()
			for time.Since(start) < 5*idle/2 {
				exchange(t, busy, "tick")
				time.Sleep(idle / 16)
			}
			wantEOF(t, quiet, 10*time.Second)
			exchange(t, busy, "still open")
			busy.Close()
			var idleErr bool
			for _, ev := range h.events.wait(t, StageClosed, 2) {
				if ev.Err != nil && strings.Contains(ev.Err.Error(), "tunnel idle for 800ms") {
					idleErr = true
				}
			}
			if !idleErr {
				t.Errorf("no closed event says the tunnel was idle: %+v", h.events.stage(StageClosed))
			}
		})
	}
}

// TestShutdown: Shutdown refuses new connections, closes a connection
// still in its handshake, lets an open tunnel finish, and returns when it
// has; a Shutdown whose context ends first returns the context's error,
// and Close then cuts the tunnel.
func TestShutdown(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	resp, tunnel := connect(t, h.addr, up.hostPort("127.0.0.1"))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	rep, socks := socksDial(t, h.addr, atypIPv4, "127.0.0.1", up.port())
	if rep != repSucceeded {
		t.Fatal(rep)
	}
	pending := dialProxy(t, h.addr)
	io.WriteString(pending, "\x05") // handshake never finished
	time.Sleep(50 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := h.p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with open tunnels returned %v", err)
	}
	if err := <-h.served; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	h.served <- ErrClosed // for the harness's cleanup
	wantEOF(t, pending, 5*time.Second)
	if c, err := net.DialTimeout("tcp", h.addr, time.Second); err == nil {
		c.Close()
		t.Error("the listener still accepts after Shutdown")
	}
	exchange(t, tunnel, "still served")
	exchange(t, socks, "still served")

	done := make(chan error, 1)
	go func() { done <- h.p.Shutdown(context.Background()) }()
	tunnel.Close()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a tunnel still open", err)
	case <-time.After(100 * time.Millisecond):
	}
	socks.Close()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown returned %v", err)
	}
}

// TestCloseCutsTunnels: Close ends open tunnels at once.
func TestCloseCutsTunnels(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	resp, tunnel := connect(t, h.addr, up.hostPort("127.0.0.1"))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	exchange(t, tunnel, "x")
	if err := h.p.Close(); err != nil {
		t.Fatal(err)
	}
	wantEOF(t, tunnel, 5*time.Second)
}

// blockingResolver answers once release is closed.
type blockingResolver struct {
	called  chan struct{}
	release chan struct{}
}

func (r *blockingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	close(r.called)
	<-r.release
	return addrs(standIn("127.0.0.1")), nil
}

// TestShutdownWaitsForDecision: a request read before Shutdown is decided
// and served, even when its lookup is still running.
func TestShutdownWaitsForDecision(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	r := &blockingResolver{called: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, setup{allow: []string{"svc.test"}, resolver: r})
	c := dialProxy(t, h.addr)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", up.hostPort("svc.test"))
	<-r.called
	done := make(chan error, 1)
	go func() { done <- h.p.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	close(r.release)
	got := make([]byte, len(connectEstablished))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != connectEstablished {
		t.Fatalf("reply %q, %v", got, err)
	}
	exchange(t, c, "decided before shutdown")
	c.Close()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
