package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// tunnelTo opens a tunnel to up over CONNECT or SOCKS5.
func tunnelTo(t *testing.T, h *harness, proto Protocol, up *upstream) net.Conn {
	t.Helper()
	if proto == ProtocolSOCKS5 {
		rep, c := socksDial(t, h.addr, atypIPv4, "127.0.0.1", up.port())
		if rep != repSucceeded {
			t.Fatalf("reply %d", rep)
		}
		return c
	}
	resp, c := connect(t, h.addr, up.hostPort("127.0.0.1"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return c
}

// TestHalfCloseClientFirst: the client sends, then half-closes; the
// upstream sees EOF, and its answer, sent after that EOF, still reaches
// the client, followed by EOF.
func TestHalfCloseClientFirst(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", func(c net.Conn) {
		b, _ := io.ReadAll(c) // until the client's half-close arrives
		io.WriteString(c, "got "+string(b))
	})
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	for _, proto := range []Protocol{ProtocolConnect, ProtocolSOCKS5} {
		t.Run(string(proto), func(t *testing.T) {
			c := tunnelTo(t, h, proto, up)
			io.WriteString(c, "request")
			if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "got request" {
				t.Fatalf("read %q, %v", got, err)
			}
		})
	}
}

// TestHalfCloseUpstreamFirst: the upstream sends, then half-closes; the
// client sees EOF but can still send, and the upstream gets it all.
func TestHalfCloseUpstreamFirst(t *testing.T) {
	received := make(chan string, 2)
	up := serveUpstream(t, "127.0.0.1:0", func(c net.Conn) {
		io.WriteString(c, "banner")
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		received <- string(b)
	})
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	for _, proto := range []Protocol{ProtocolConnect, ProtocolSOCKS5} {
		t.Run(string(proto), func(t *testing.T) {
			c := tunnelTo(t, h, proto, up)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "banner" {
				t.Fatalf("read %q, %v", got, err)
			}
			msg := strings.Repeat("after EOF ", 10000)
			if _, err := io.WriteString(c, msg); err != nil {
				t.Fatalf("write after the upstream's half-close: %v", err)
			}
			c.(interface{ CloseWrite() error }).CloseWrite()
			select {
			case r := <-received:
				if r != msg {
					t.Fatalf("upstream got %d bytes, want %d", len(r), len(msg))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("upstream never got the client's data")
			}
		})
	}
}
