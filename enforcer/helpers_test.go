package enforcer_test

import (
	"net/netip"
	"testing"
)

type netipAddr = netip.Addr

func parseAddrs(t *testing.T, ss []string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}
