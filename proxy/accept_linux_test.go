package proxy

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestServeDefersAccept: Serve sets TCP_DEFER_ACCEPT on a TCP listener,
// and a client that sends nothing is still handed over and cut off by the
// handshake timeout (TestHandshakeTimeout, "silent").
func TestServeDefersAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	newHarness(t, setup{listener: ln})
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	waitFor(t, "Serve to set the option", func() bool {
		if err := raw.Control(func(fd uintptr) {
			v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		return v > 0
	})
}
