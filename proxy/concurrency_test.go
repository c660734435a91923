package proxy

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
)

// TestThousandConcurrentTunnels holds 1,000 tunnels open at once (half
// CONNECT, half SOCKS5), each carrying its own data, then closes them.
func TestThousandConcurrentTunnels(t *testing.T) {
	const n = 1000
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}, limits: Limits{MaxTunnels: n, MaxTunnelsPerClient: n}})
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			c, err := openTunnel(h.addr, up, i%2 == 0)
			if err != nil {
				errs <- fmt.Errorf("tunnel %d: %w", i, err)
				return
			}
			conns[i] = c
			if err := echoCheck(c, fmt.Sprintf("tunnel %d", i)); err != nil {
				errs <- fmt.Errorf("tunnel %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// All are open at once: each answers again before any is closed.
	for i, c := range conns {
		wg.Go(func() {
			if err := echoCheck(c, fmt.Sprintf("again %d", i)); err != nil {
				t.Errorf("tunnel %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	evs := h.events.wait(t, StageClosed, n)
	for _, ev := range evs {
		if ev.Err != nil {
			t.Errorf("tunnel ended with %v", ev.Err)
		}
	}
}

// openTunnel opens a tunnel without the testing helpers (which may not
// fail a test from another goroutine).
func openTunnel(proxyAddr string, up *upstream, socks bool) (net.Conn, error) {
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	if socks {
		req := []byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, byte(up.port() >> 8), byte(up.port())}
		if _, err := c.Write(req); err != nil {
			return nil, err
		}
		reply := make([]byte, 12)
		if _, err := readFull(c, reply); err != nil || reply[3] != repSucceeded {
			return nil, fmt.Errorf("SOCKS5 reply % x, %v", reply, err)
		}
		return c, nil
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", up.hostPort("127.0.0.1"))
	reply := make([]byte, len(connectEstablished))
	if _, err := readFull(c, reply); err != nil || string(reply) != connectEstablished {
		return nil, fmt.Errorf("CONNECT reply %q, %v (status %d expected)", reply, err, http.StatusOK)
	}
	return c, nil
}
