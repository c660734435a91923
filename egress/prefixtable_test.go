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
	for i := range 300 {
		v6 := r.IntN(2) == 0
		a := randAddr(v6)
		bits := r.IntN(a.BitLen() + 1)
		if i%10 == 0 {
			bits = r.IntN(9) // some prefixes shorter than a byte
		}
		p := netip.PrefixFrom(a, bits).Masked()
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
	for i := range 10000 {
		a := randAddr(r.IntN(2) == 0)
		if i%2 == 1 {
			// Any first byte, so that the first-byte filter is tested too.
			if a.Is4() {
				b := a.As4()
				b[0] = byte(r.IntN(256))
				a = netip.AddrFrom4(b)
			} else {
				b := a.As16()
				b[0] = byte(r.IntN(256))
				a = netip.AddrFrom16(b)
			}
		}
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

// TestPrefixTableFewPrefixes: with few prefixes, some shorter than 16
// bits, every address over the first 16 bits finds its longest prefix, or
// none.
func TestPrefixTableFewPrefixes(t *testing.T) {
	var tbl prefixTable[netip.Prefix]
	var list []netip.Prefix
	for _, s := range []string{"10.0.0.0/8", "128.0.0.0/2", "169.254.0.0/16", "6.0.0.0/7", "172.16.0.0/12", "192.168.1.0/24",
		"fe80::/10", "2001:db8::/32", "4000::/3", "2606:2800::/20"} {
		p := netip.MustParsePrefix(s)
		tbl.insert(p, p)
		list = append(list, p)
	}
	for b := range 1 << 16 {
		hi, lo := byte(b>>8), byte(b)
		for _, a := range []netip.Addr{
			netip.AddrFrom4([4]byte{hi, lo, 1, 2}),
			netip.AddrFrom4([4]byte{hi, lo, 255, 255}),
			netip.AddrFrom16([16]byte{hi, lo, 0x0d, 0xb8, 15: 1}),
			netip.AddrFrom16([16]byte{hi, lo, 0xff, 0xff, 15: 1}),
		} {
			var want netip.Prefix
			found := false
			for _, p := range list {
				if p.Contains(a) && (!found || p.Bits() > want.Bits()) {
					want, found = p, true
				}
			}
			got, ok := tbl.lookup(a)
			if ok != found || got != want {
				t.Errorf("lookup(%s) = %s %v, want %s %v", a, got, ok, want, found)
			}
		}
	}
}
