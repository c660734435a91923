package egress

import (
	"net/netip"
	"slices"
)

// prefixTable maps prefixes to values and answers longest-prefix-match
// queries. It keeps one hash map keyed by the masked prefix and the set of
// prefix lengths in use, so a lookup costs one map probe per distinct length
// (at most 33 for IPv4 and 129 for IPv6, whatever the number of entries)
// and never scans the entries.
type prefixTable[V any] struct {
	m    map[netip.Prefix]V
	lens [2][]int // [0] IPv4, [1] IPv6; each sorted longest first
}

func familyIndex(a netip.Addr) int {
	if a.Is4() {
		return 0
	}
	return 1
}

// insert adds p with value v. When p is already present, keep decides
// whether the existing value stays (it is passed the old value).
func (t *prefixTable[V]) insert(p netip.Prefix, v V, keep func(old V) bool) {
	p = p.Masked()
	if t.m == nil {
		t.m = make(map[netip.Prefix]V)
	}
	if old, ok := t.m[p]; ok {
		if keep == nil || keep(old) {
			return
		}
		t.m[p] = v
		return
	}
	t.m[p] = v
	f := familyIndex(p.Addr())
	if !slices.Contains(t.lens[f], p.Bits()) {
		t.lens[f] = append(t.lens[f], p.Bits())
		slices.SortFunc(t.lens[f], func(a, b int) int { return b - a })
	}
}

// lookup returns the value of the longest prefix that contains a.
func (t *prefixTable[V]) lookup(a netip.Addr) (netip.Prefix, V, bool) {
	return t.lookupMax(a, 128)
}

// lookupMax is lookup restricted to prefixes of at most maxBits bits.
func (t *prefixTable[V]) lookupMax(a netip.Addr, maxBits int) (netip.Prefix, V, bool) {
	var zero V
	if len(t.m) == 0 || !a.IsValid() {
		return netip.Prefix{}, zero, false
	}
	a = a.WithZone("")
	for _, l := range t.lens[familyIndex(a)] {
		if l > maxBits {
			continue
		}
		p, err := a.Prefix(l)
		if err != nil {
			continue
		}
		if v, ok := t.m[p]; ok {
			return p, v, true
		}
	}
	return netip.Prefix{}, zero, false
}
