package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
)

// TestTunnelsGetBareTCPConns: every way of opening a tunnel (CONNECT as
// the first request, CONNECT after a request on a keep-alive connection,
// SOCKS5) hands the tunnel the bare *net.TCPConn on both sides, so that
// io.Copy splices, and the idle watch does not wrap them.
func TestTunnelsGetBareTCPConns(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	tunnelHook = func(client, up net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%T %T", client, up))
		if runtime.GOOS == "linux" {
			if a, b, _ := idleProbe(client, up); a != client || b != up {
				seen = append(seen, fmt.Sprintf("idle watch wrapped them: %T %T", a, b))
			}
		}
	}
	defer func() { tunnelHook = nil }()
	up := serveUpstream(t, "127.0.0.1:0", echo)
	httpUp := serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1"), httpUp.hostPort("127.0.0.1")}})

	resp, c := connect(t, h.addr, up.hostPort("127.0.0.1"))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	exchange(t, c, "inline")
	c.Close()

	k := dialProxy(t, h.addr)
	br := bufio.NewReader(k)
	fmt.Fprintf(k, "GET http://%s/ HTTP/1.1\r\nHost: x\r\n\r\n", httpUp.hostPort("127.0.0.1"))
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	} else {
		io.ReadAll(resp.Body)
	}
	fmt.Fprintf(k, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", up.hostPort("127.0.0.1"))
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT after GET: %v %v", resp, err)
	}
	exchange(t, &bufConn{Conn: k, r: br}, "after keep-alive")
	k.Close()

	rep, s := socksDial(t, h.addr, atypIPv4, "127.0.0.1", up.port())
	if rep != repSucceeded {
		t.Fatal(rep)
	}
	exchange(t, s, "socks")
	s.Close()

	h.events.wait(t, StageClosed, 4)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("tunnels seen: %q", seen)
	}
	for _, s := range seen {
		if s != "*net.TCPConn *net.TCPConn" {
			t.Errorf("tunnel over %s", s)
		}
	}
}
