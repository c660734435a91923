package testutil

import (
	"context"
	"net"
	"net/netip"
	"testing"
)

// Stand-ins for loopback servers that tests reach by name: no name reaches
// loopback through the egress proxy (docs/egress.md), so a test's resolver
// answers such a name with a stand-in, an address of the benchmarking
// ranges (not public, so an exact allowlisted name reaches it, and never
// an address of the host), and StandInDialer connects a stand-in to
// loopback on the same port: 198.18.0.N to 127.0.0.N, 2001:2::1 to ::1.
var (
	standIn4 = netip.MustParsePrefix("198.18.0.0/24")
	standIn6 = netip.MustParseAddr("2001:2::1")
)

// StandIn returns the stand-in of a loopback address (127.0.0.N or ::1).
func StandIn(loopback netip.Addr) netip.Addr {
	if loopback.Is6() {
		return standIn6
	}
	b := loopback.As4()
	return netip.AddrFrom4([4]byte{198, 18, 0, b[3]})
}

// ThroughStandIn maps a stand-in "address:port" to the loopback one it
// stands for, and returns any other address as it is.
func ThroughStandIn(addr string) string {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return addr
	}
	switch a := ap.Addr(); {
	case standIn4.Contains(a):
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, a.As4()[3]}), ap.Port()).String()
	case a == standIn6:
		return netip.AddrPortFrom(netip.IPv6Loopback(), ap.Port()).String()
	}
	return addr
}

// StandInDialer is LoopbackDialer after ThroughStandIn: a stand-in is
// dialled at loopback, anything else off loopback fails the test.
func StandInDialer(t testing.TB) func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := LoopbackDialer(t)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dial(ctx, network, ThroughStandIn(addr))
	}
}
