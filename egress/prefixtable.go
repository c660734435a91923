package egress

import (
	"encoding/binary"
	"net/netip"
	"slices"
)

// prefixTable maps prefixes to values and answers longest-prefix-match
// queries. It keeps one hash map per family, keyed by the masked address
// and the prefix length as plain integers (cheap to hash), and the set of
// prefix lengths in use, so a lookup costs one probe per distinct length
// (at most 33 for IPv4 and 129 for IPv6, whatever the number of entries)
// and never scans the entries.
type prefixTable[V any] struct {
	v4   map[uint64]V // masked address << 8 | length
	v6   map[v6Key]V
	lens [2][]int // [0] IPv4, [1] IPv6; each sorted longest first
}

type v6Key struct {
	hi, lo uint64
	bits   uint8
}

func familyIndex(a netip.Addr) int {
	if a.Is4() {
		return 0
	}
	return 1
}

func v4Key(a netip.Addr, bits int) uint64 {
	b := a.As4()
	u := binary.BigEndian.Uint32(b[:])
	if bits < 32 {
		u &^= ^uint32(0) >> bits
	}
	return uint64(u)<<8 | uint64(bits)
}

func v6KeyOf(a netip.Addr, bits int) v6Key {
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	switch {
	case bits <= 64:
		lo = 0
		if bits < 64 {
			hi &^= ^uint64(0) >> bits
		}
	case bits < 128:
		lo &^= ^uint64(0) >> (bits - 64)
	}
	return v6Key{hi, lo, uint8(bits)}
}

// get returns the value stored for the prefix of a of the given length.
func (t *prefixTable[V]) get(a netip.Addr, bits int) (V, bool) {
	var v V
	var ok bool
	if a.Is4() {
		v, ok = t.v4[v4Key(a, bits)]
	} else {
		v, ok = t.v6[v6KeyOf(a, bits)]
	}
	return v, ok
}

func (t *prefixTable[V]) empty() bool { return len(t.v4) == 0 && len(t.v6) == 0 }

// insert adds p with value v unless p is already present.
func (t *prefixTable[V]) insert(p netip.Prefix, v V) {
	a, bits := p.Addr().WithZone(""), p.Bits()
	if _, ok := t.get(a, bits); ok {
		return
	}
	if a.Is4() {
		if t.v4 == nil {
			t.v4 = make(map[uint64]V)
		}
		t.v4[v4Key(a, bits)] = v
	} else {
		if t.v6 == nil {
			t.v6 = make(map[v6Key]V)
		}
		t.v6[v6KeyOf(a, bits)] = v
	}
	f := familyIndex(a)
	if !slices.Contains(t.lens[f], bits) {
		t.lens[f] = append(t.lens[f], bits)
		slices.SortFunc(t.lens[f], func(a, b int) int { return b - a })
	}
}

// each calls fn for every stored prefix and value.
func (t *prefixTable[V]) each(fn func(netip.Prefix, V)) {
	for k, v := range t.v4 {
		u := uint32(k >> 8)
		fn(netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}), int(k&0xff)), v)
	}
	for k, v := range t.v6 {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], k.hi)
		binary.BigEndian.PutUint64(b[8:], k.lo)
		fn(netip.PrefixFrom(netip.AddrFrom16(b), int(k.bits)), v)
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
