package egress

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestPrefixTableMatchesScan compares longest-prefix lookups with a scan
// of netip.Prefix.Contains on random prefixes and addresses.
func TestPrefixTableMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	randAddr := func(v6 bool) netip.Addr {
		if v6 {
			var b [16]byte
			for i := range b {
				b[i] = byte(r.IntN(4)) // few distinct values, so prefixes overlap
			}
			return netip.AddrFrom16(b)
		}
		return netip.AddrFrom4([4]byte{byte(r.IntN(4)), byte(r.IntN(4)), byte(r.IntN(4)), byte(r.IntN(4))})
	}
	var tbl prefixTable[netip.Prefix]
	var list []netip.Prefix
	for range 300 {
		v6 := r.IntN(2) == 0
		a := randAddr(v6)
		p := netip.PrefixFrom(a, r.IntN(a.BitLen()+1)).Masked()
		tbl.insert(p, p)
		list = append(list, p)
	}
	seen := map[netip.Prefix]bool{}
	tbl.each(func(p netip.Prefix, v netip.Prefix) {
		if p != v {
			t.Errorf("each: key %s holds %s", p, v)
		}
		seen[p] = true
	})
	for _, p := range list {
		if !seen[p] {
			t.Errorf("each missed %s", p)
		}
	}
	for range 5000 {
		a := randAddr(r.IntN(2) == 0)
		var want netip.Prefix
		found := false
		for _, p := range list {
			if p.Contains(a) && (!found || p.Bits() > want.Bits()) {
				want, found = p, true
			}
		}
		got, ok := tbl.lookup(a)
		if ok != found || got != want {
			t.Fatalf("lookup(%s) = %s %v, want %s %v", a, got, ok, want, found)
		}
	}
}
