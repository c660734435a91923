package initproc

import (
	"net"
	"strings"
	"testing"
)

// TestParseAddr4 accepts only "a.b.c.d:port" in its canonical spelling:
// the canary probe fails on anything else rather than passing unprobed.
func TestParseAddr4(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		addr [4]byte
		port int
	}{
		{"127.0.0.1:8080", true, [4]byte{127, 0, 0, 1}, 8080},
		{"10.1.2.3:1", true, [4]byte{10, 1, 2, 3}, 1},
		{"127.0.0.1:0", false, [4]byte{}, 0},
		{"127.0.0.1:65536", false, [4]byte{}, 0},
		{"127.0.0.1:080", false, [4]byte{}, 0},
		{"127.0.0.01:80", false, [4]byte{}, 0},
		{"127.0.0.256:80", false, [4]byte{}, 0},
		{"127.0.1:80", false, [4]byte{}, 0},
		{"[::1]:80", false, [4]byte{}, 0},
		{"localhost:80", false, [4]byte{}, 0},
		{"127.0.0.1", false, [4]byte{}, 0},
		{"", false, [4]byte{}, 0},
	} {
		sa, ok := parseAddr4(c.in)
		if ok != c.ok || (ok && (sa.Addr != c.addr || sa.Port != c.port)) {
			t.Errorf("parseAddr4(%q) = %+v, %v; want %v %v:%d", c.in, sa, ok, c.ok, c.addr, c.port)
		}
	}
}

// TestProbeUnreachable runs the canary probe against a loopback listener
// (reached: the probe fails), a closed port (passes) and an address it
// cannot parse (fails, never passes unprobed).
func TestProbeUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if r := probeUnreachable(addr); r.OK || !strings.Contains(r.Detail, "was reached") {
		t.Errorf("open listener: %+v, want a failure", r)
	}
	lis.Close()
	if r := probeUnreachable(addr); !r.OK {
		t.Errorf("closed port: %+v, want a pass", r)
	}
	if r := probeUnreachable("[::1]:1"); r.OK || !strings.Contains(r.Detail, "not probed") {
		t.Errorf("IPv6 address: %+v, want a failure", r)
	}
}
