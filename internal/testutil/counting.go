package testutil

import (
	"net"
	"sync/atomic"
	"testing"
)

// Counted is a socket on the host's loopback that counts what reaches
// it: a test's proof that an attempt from inside got nowhere.
type Counted struct {
	// Addr is its address, "127.0.0.1:port".
	Addr string
	// Hits counts the connections it took or the datagrams it got.
	Hits atomic.Int32
}

// CountingListener is a TCP listener on 127.0.0.1 that counts the
// connections it takes (and closes them); it is closed at cleanup.
func CountingListener(t testing.TB) *Counted {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &Counted{Addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.Hits.Add(1)
			conn.Close()
		}
	}()
	return c
}

// CountingUDP is a UDP socket on 127.0.0.1 that counts the datagrams it
// gets; it is closed at cleanup.
func CountingUDP(t testing.TB) *Counted {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	c := &Counted{Addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			c.Hits.Add(1)
		}
	}()
	return c
}
