package egress

import "net/netip"

// AddrClass names what a is, as the gate's reasons name it: "public", or
// the special-purpose range it (or an IPv4 address embedded in it) lies
// in, such as "private (RFC 1918)" or "loopback (RFC 1122)"; and whether
// it is public, so that a wildcard could reach it. Policy authoring says
// so of the entries it suggests and the widenings it finds.
func AddrClass(a netip.Addr) (string, bool) {
	c, public := classify(a.WithZone("").Unmap())
	if public {
		return publicClass.name, true
	}
	return c.text(), false
}
