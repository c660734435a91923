package proxy

import (
	"net"
	"runtime"
	"testing"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// TestTunnelKeepsBareTCPConns: sniffing and the idle watch leave TCP
// connections unwrapped, so that io.Copy between them can splice.
func TestTunnelKeepsBareTCPConns(t *testing.T) {
	a, b := tcpPair(t)
	if _, err := b.Write([]byte{5}); err != nil {
		t.Fatal(err)
	}
	first, c, err := peekByte(a)
	if err != nil || first != 5 || c != net.Conn(a) {
		t.Fatalf("peekByte: %x %T %v, want 05 and the bare *net.TCPConn", first, c, err)
	}
	var buf [1]byte
	if n, _ := a.Read(buf[:]); n != 1 || buf[0] != 5 {
		t.Fatal("the peeked byte was consumed")
	}
	x, y, probe := idleProbe(a, b)
	if runtime.GOOS == "linux" && (x != net.Conn(a) || y != net.Conn(b)) {
		t.Fatalf("idleProbe wrapped the connections: %T %T", x, y)
	}
	if idle, ok := probe(); !ok || idle < 0 {
		t.Fatalf("probe: %v %v", idle, ok)
	}
}
