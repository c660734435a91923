package egress

import "net/netip"

// maxViews bounds the addresses one address can stand for: itself plus the
// IPv4 addresses embedded in it (four candidate positions for local-use
// NAT64 is the most).
const maxViews = 6

// views is an address and the IPv4 addresses embedded in it.
type views struct {
	a [maxViews]netip.Addr
	n int
}

func (v *views) add(a netip.Addr) {
	if v.n < maxViews {
		v.a[v.n] = a
		v.n++
	}
}

func v4(b0, b1, b2, b3 byte) netip.Addr { return netip.AddrFrom4([4]byte{b0, b1, b2, b3}) }

// viewsOf returns a (zone dropped, IPv4-mapped form unmapped) followed by
// every IPv4 address that a carries under a transition mechanism, so that
// each can be checked as IPv4 too:
//
//   - IPv4-mapped ::ffff:a.b.c.d (RFC 4291 2.5.5.2): a is taken as IPv4.
//   - IPv4-compatible ::a.b.c.d (RFC 4291 2.5.5.1, deprecated).
//   - IPv4-translated ::ffff:0:a.b.c.d (RFC 2765, SIIT).
//   - NAT64 well-known prefix 64:ff9b::/96 (RFC 6052).
//   - NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215): the operator picks
//     the prefix length, so every RFC 6052 position that fits inside the
//     /48 (/48, /56, /64, /96) is taken.
//   - 6to4 2002:aabb:ccdd::/48 (RFC 3056).
//   - Teredo 2001:0::/32 (RFC 4380): the server address in bits 32-63 and
//     the client address, stored inverted, in bits 96-127.
//   - ISATAP interface identifiers 0[02]00:5efe:a.b.c.d under any prefix
//     (RFC 5214).
func viewsOf(a netip.Addr) views {
	var v views
	a = a.WithZone("").Unmap()
	v.add(a)
	if !a.Is6() {
		return v
	}
	b := a.As16()
	zero := func(from, to int) bool {
		for _, x := range b[from:to] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	low := v4(b[12], b[13], b[14], b[15])
	switch {
	case zero(0, 12):
		v.add(low) // IPv4-compatible (includes :: and ::1, both non-public anyway)
	case zero(0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0:
		v.add(low) // IPv4-translated
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12):
		v.add(low) // NAT64 well-known prefix
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1:
		v.add(v4(b[6], b[7], b[9], b[10]))   // /48
		v.add(v4(b[7], b[9], b[10], b[11]))  // /56
		v.add(v4(b[9], b[10], b[11], b[12])) // /64
		v.add(low)                           // /96
	case b[0] == 0x20 && b[1] == 0x02:
		v.add(v4(b[2], b[3], b[4], b[5])) // 6to4
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		v.add(v4(b[4], b[5], b[6], b[7]))         // Teredo server
		v.add(v4(^b[12], ^b[13], ^b[14], ^b[15])) // Teredo client, obfuscated
	}
	if b[8]&^0x02 == 0 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		v.add(low) // ISATAP
	}
	return v
}
