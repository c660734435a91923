package egress

import (
	"net/netip"
	"slices"
)

// prefixTable maps prefixes to values and answers longest-prefix-match
// queries. It keeps one map keyed by the masked prefix, and the set of
// prefix lengths in use, so a lookup costs one probe per distinct length
// (at most 33 for IPv4 and 129 for IPv6, whatever the number of entries)
// and never scans the entries.
type prefixTable[V any] struct {
	m    map[netip.Prefix]V // masked, without zone
	lens [2][]int           // [0] IPv4, [1] IPv6; each sorted longest first
}

func familyIndex(a netip.Addr) int {
	if a.Is4() {
		return 0
	}
	return 1
}

// get returns the value stored for the prefix of a of the given length.
func (t *prefixTable[V]) get(a netip.Addr, bits int) (V, bool) {
	p, _ := a.Prefix(bits) // masked, zone dropped; invalid bits: the zero prefix, never stored
	v, ok := t.m[p]
	return v, ok
}

func (t *prefixTable[V]) empty() bool { return len(t.m) == 0 }

// insert adds p with value v unless p is already present.
func (t *prefixTable[V]) insert(p netip.Prefix, v V) {
	k := p.Masked()
	if _, ok := t.m[k]; ok {
		return
	}
	if t.m == nil {
		t.m = make(map[netip.Prefix]V)
	}
	t.m[k] = v
	f := familyIndex(k.Addr())
	if !slices.Contains(t.lens[f], k.Bits()) {
		t.lens[f] = append(t.lens[f], k.Bits())
		slices.SortFunc(t.lens[f], func(a, b int) int { return b - a })
	}
}

// each calls fn for every stored prefix and value.
func (t *prefixTable[V]) each(fn func(netip.Prefix, V)) {
	for p, v := range t.m {
		fn(p, v)
	}
}

// lookup returns the value of the longest prefix that contains a.
func (t *prefixTable[V]) lookup(a netip.Addr) (V, bool) {
	return t.lookupMax(a, 128)
}

// lookupMax is lookup restricted to prefixes of at most maxBits bits.
func (t *prefixTable[V]) lookupMax(a netip.Addr, maxBits int) (V, bool) {
	if a.IsValid() {
		for _, l := range t.lens[familyIndex(a)] {
			if l > maxBits {
				continue
			}
			if v, ok := t.get(a, l); ok {
				return v, true
			}
		}
	}
	var zero V
	return zero, false
}
