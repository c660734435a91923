package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// LocalAddrs tells the gate which addresses belong to the host the proxy
// dials from (its interfaces' addresses). HostAddrs is the host's own,
// watched for changes; FixedAddrs a fixed set (for tests, and for
// explaining a decision on another host's behalf).
type LocalAddrs interface {
	// Contains reports whether a is one of the host's addresses.
	Contains(a netip.Addr) bool
}

// FixedAddrs is a fixed set of host addresses.
type FixedAddrs []netip.Addr

// Contains reports whether a is in the set.
func (f FixedAddrs) Contains(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, x := range f {
		if x.WithZone("").Unmap() == a {
			return true
		}
	}
	return false
}

// The classes of the host's own addresses, for reasons (docs/egress.md,
// "The host's own addresses").
const (
	classLoopback    = "loopback"
	classUnspecified = "unspecified"
	classHostAddr    = "an address of this host's interfaces"
)

// hostOwn reports whether an address is the host's own: loopback
// (127.0.0.0/8, ::1), unspecified (0.0.0.0/8, ::), or an address of the
// host's interfaces; or an IPv4-compatible or IPv4-translated IPv6 address
// (::a.b.c.d, ::ffff:0:a.b.c.d) that embeds one, which a host's stack may
// deliver as that IPv4 address. (An IPv4-mapped address is already its
// IPv4 address.) A connection to one stays on the host the proxy runs on,
// so only an IP or CIDR entry that names the port reaches it. The other
// embeddings (NAT64, 6to4, Teredo) are routed to a gateway, not to the
// host; their embedded addresses are checked for being public as before.
// v holds the address's views (viewsOf): the address first.
func (g *Gate) hostOwn(v *views) (nonPublic, bool) {
	a := v.a[0]
	if class := g.ownClass(a); class != "" {
		return nonPublic{class: class, hostOwn: true}, true
	}
	if a.Is6() && v.n > 1 {
		b := a.As16()
		compat := b == [16]byte{12: b[12], 13: b[13], 14: b[14], 15: b[15]}
		translated := b == [16]byte{8: 0xff, 9: 0xff, 12: b[12], 13: b[13], 14: b[14], 15: b[15]}
		if compat || translated {
			low := v4(b[12], b[13], b[14], b[15])
			if class := g.ownClass(low); class != "" {
				return nonPublic{class: class, embedded: low, hostOwn: true}, true
			}
		}
	}
	return nonPublic{}, false
}

// ownClass names the class of a host's own address, or "".
func (g *Gate) ownClass(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return classLoopback
	case a.IsUnspecified() || (a.Is4() && a.As4()[0] == 0):
		return classUnspecified
	case g.local != nil && g.local.Contains(a):
		return classHostAddr
	}
	return ""
}

// staticHostOwn are the ranges that are the host's own on every host.
var staticHostOwn = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("::/128"),
}

// specialUse says why name, normalised, is a special-use name that no
// entry reaches, with a hint for a policy that lists it, or "" for any
// other name: "localhost" and the names under it, which resolvers answer
// with loopback addresses (RFC 6761, 6.3); "invalid" and the names under
// it, which never resolve (RFC 6761, 6.4); "onion" and the names under
// it, Tor's, which must not be looked up in DNS (RFC 7686). The gate
// refuses them under every entry, "*" included, and a policy may not list
// them.
func specialUse(name string) (why, hint string) {
	under := func(tld string) bool { return name == tld || strings.HasSuffix(name, "."+tld) }
	switch {
	case under("localhost"):
		return "a localhost name resolves to loopback, which no name reaches (only an IP or CIDR entry with a port does)",
			`to reach a service on this host, write its address and port, e.g. "127.0.0.1:8080"`
	case under("invalid"):
		return `an ".invalid" name never resolves (RFC 6761)`, "remove it"
	case under("onion"):
		return `an ".onion" name is Tor's, and is never looked up in DNS (RFC 7686)`, "remove it"
	}
	return "", ""
}

// isCatchAll reports whether p spans more than one kind of address: it
// strictly contains one of the special-purpose blocks of the address class
// table (loopback, private, documentation, ...), or it is an IPv6 range
// whose addresses embed IPv4 addresses (NAT64, 6to4, IPv4-compatible) and
// the IPv4 range they embed is a catch-all. "0.0.0.0/0", "::/0",
// "0.0.0.0/1", "2000::/3", "64:ff9b::/96" are catch-alls; "10.0.0.0/8",
// "127.0.0.0/8", "8.0.0.0/7" and "2001:db8::/32" are not.
func isCatchAll(p netip.Prefix) bool {
	p = p.Masked()
	for e := range classTable.m {
		if e.Bits() > p.Bits() && p.Contains(e.Addr()) {
			return true
		}
	}
	if !p.Addr().Is6() {
		return false
	}
	for _, ce := range contiguousEmbeddings {
		if p.Bits() < ce.prefix.Bits() || !ce.prefix.Contains(p.Addr()) {
			continue
		}
		b := p.Addr().As16()
		off := ce.off / 8
		a4 := netip.AddrFrom4([4]byte{b[off], b[off+1], b[off+2], b[off+3]})
		return isCatchAll(netip.PrefixFrom(a4, min(p.Bits()-ce.off, 32)))
	}
	return false
}

// ReachError says why an allowlist entry cannot mean what it says under
// the rules for the host's own addresses and catch-all ranges
// (docs/egress.md), with a hint for the policy's author.
type ReachError struct {
	// Entry is the allowlist entry as written.
	Entry string
	// Problem says what is wrong, Hint what to write instead.
	Problem, Hint string
}

// Error returns "egress: allowlist entry "E": PROBLEM".
func (e *ReachError) Error() string {
	return "egress: allowlist entry " + strconv.Quote(e.Entry) + ": " + e.Problem
}

// reachProblem returns the ReachError for an entry that names a
// special-use name (specialUse), a catch-all range, or only the host's
// own addresses without a port; nil for any other entry.
func reachProblem(e entry) *ReachError {
	switch e.kind {
	case kindExact, kindSuffix:
		if why, hint := specialUse(e.name); why != "" {
			return &ReachError{e.raw, why, hint}
		}
	case kindPrefix:
		if isCatchAll(e.prefix) {
			return &ReachError{e.raw, "a catch-all range (it spans special-purpose blocks such as loopback, private and public addresses) is refused",
				`write "*" for any public host, and each non-public range you mean on its own ("10.0.0.0/8", "127.0.0.1:8080")`}
		}
		if e.port == 0 && withinStaticHostOwn(e.prefix) {
			return &ReachError{e.raw, "this host's loopback and unspecified addresses are reached only through an entry that names the port",
				`add the port, e.g. "127.0.0.1:8080"`}
		}
	}
	return nil
}

// withinStaticHostOwn reports whether p lies inside one of staticHostOwn.
func withinStaticHostOwn(p netip.Prefix) bool {
	for _, s := range staticHostOwn {
		if s.Addr().BitLen() == p.Addr().BitLen() && s.Bits() <= p.Bits() && s.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// CheckReach returns a *ReachError for a well-formed allowlist entry that
// the rules for the host's own addresses and catch-all ranges make
// meaningless or refuse (docs/egress.md), and nil otherwise (also for a
// malformed entry: see ValidateEntry). Compile refuses the same entries.
func CheckReach(entry string) error {
	e, err := parseEntry(entry)
	if err != nil {
		return nil
	}
	if re := reachProblem(e); re != nil {
		return re
	}
	return nil
}
