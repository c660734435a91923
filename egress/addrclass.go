package egress

import "net/netip"

// addrClass is what a special-purpose range is, for reasons.
type addrClass struct {
	name   string
	public bool
}

// specialPurpose lists the address ranges that are not ordinary public
// unicast, from the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (RFC 6890) and the RFCs named beside each. The longest matching prefix
// decides. Anything in IPv6 outside 2000::/3 (global unicast, RFC 4291) is
// reserved except the NAT64 well-known prefix, whose addresses stand for
// the IPv4 address they embed.
//
// Hand-written rather than taken from a library: the list is data, short,
// and each line cites its source; keeping it here lets the gate name the
// class in its reasons and treat the transition prefixes by their
// embedded IPv4 address.
var specialPurpose = []struct {
	prefix string
	class  addrClass
}{
	// IPv4.
	{"0.0.0.0/0", addrClass{"public", true}},
	{"0.0.0.0/8", addrClass{"this-network (RFC 791)", false}},
	{"0.0.0.0/32", addrClass{"unspecified (RFC 1122)", false}},
	{"10.0.0.0/8", addrClass{"private (RFC 1918)", false}},
	{"100.64.0.0/10", addrClass{"shared CGNAT (RFC 6598)", false}},
	{"127.0.0.0/8", addrClass{"loopback (RFC 1122)", false}},
	{"169.254.0.0/16", addrClass{"link-local (RFC 3927)", false}},
	{"172.16.0.0/12", addrClass{"private (RFC 1918)", false}},
	{"192.0.0.0/24", addrClass{"IETF protocol assignment (RFC 6890)", false}},
	{"192.0.2.0/24", addrClass{"documentation (RFC 5737)", false}},
	{"192.88.99.0/24", addrClass{"6to4 relay anycast (RFC 7526)", false}},
	{"192.168.0.0/16", addrClass{"private (RFC 1918)", false}},
	{"198.18.0.0/15", addrClass{"benchmarking (RFC 2544)", false}},
	{"198.51.100.0/24", addrClass{"documentation (RFC 5737)", false}},
	{"203.0.113.0/24", addrClass{"documentation (RFC 5737)", false}},
	{"224.0.0.0/4", addrClass{"multicast (RFC 5771)", false}},
	{"240.0.0.0/4", addrClass{"reserved (RFC 1112)", false}},
	{"255.255.255.255/32", addrClass{"broadcast (RFC 919)", false}},

	// IPv6.
	{"::/0", addrClass{"reserved (outside 2000::/3, RFC 4291)", false}},
	{"::/128", addrClass{"unspecified (RFC 4291)", false}},
	{"::1/128", addrClass{"loopback (RFC 4291)", false}},
	{"::/96", addrClass{"IPv4-compatible (deprecated, RFC 4291)", false}},
	{"::ffff:0:0:0/96", addrClass{"IPv4-translated (RFC 2765)", false}},
	{"64:ff9b::/96", addrClass{"public", true}}, // NAT64 (RFC 6052): judged by its IPv4
	{"64:ff9b:1::/48", addrClass{"local-use NAT64 (RFC 8215)", false}},
	{"100::/64", addrClass{"discard-only (RFC 6666)", false}},
	{"2000::/3", addrClass{"public", true}},
	{"2001::/23", addrClass{"IETF protocol assignment (RFC 2928)", false}}, // Teredo, benchmarking, ORCHID
	{"2001:db8::/32", addrClass{"documentation (RFC 3849)", false}},
	{"3fff::/20", addrClass{"documentation (RFC 9637)", false}},
	{"5f00::/16", addrClass{"SRv6 SID (RFC 9602)", false}},
	{"fc00::/7", addrClass{"unique-local (RFC 4193)", false}},
	{"fe80::/10", addrClass{"link-local (RFC 4291)", false}},
	{"fec0::/10", addrClass{"site-local (deprecated, RFC 3879)", false}},
	{"ff00::/8", addrClass{"multicast (RFC 4291)", false}},
	// 6to4 2002::/16 (RFC 3056) falls under 2000::/3: judged by its IPv4.
}

// classTable is specialPurpose parsed.
var classTable = func() *prefixTable[addrClass] {
	t := &prefixTable[addrClass]{}
	for _, s := range specialPurpose {
		t.insert(netip.MustParsePrefix(s.prefix), s.class)
	}
	return t
}()

var publicClass = addrClass{"public", true}

// classOf returns the class of the longest special-purpose prefix that
// contains a; false when none does.
func classOf(a netip.Addr) (addrClass, bool) {
	return classTable.lookup(a)
}

// nonPublic says why an address is not public: the class of the first
// of its views that is not, and that view when it is an IPv4 address
// embedded in the address. Its text is written only into a reason.
type nonPublic struct {
	class    string
	embedded netip.Addr // valid when class is that of an embedded IPv4 address
	hostOwn  bool       // the address is the host's own (see Gate.hostOwn)
}

// embeddedText joins a class and the embedded address in reasons.
const embeddedText = " embedded IPv4 "

// classify reports why a is not a public address, or true when it is: an
// address is public only when it and every IPv4 address embedded in it are
// ordinary public unicast.
func classify(a netip.Addr) (nonPublic, bool) {
	v := viewsOf(a)
	return classifyViews(&v)
}

// classifyViews is classify on an address's views.
func classifyViews(v *views) (nonPublic, bool) {
	for i := range v.n {
		c, ok := classOf(v.a[i])
		if !ok {
			return nonPublic{class: "invalid"}, false
		}
		if !c.public {
			if i > 0 {
				return nonPublic{class: c.name, embedded: v.a[i]}, false
			}
			return nonPublic{class: c.name}, false
		}
	}
	return nonPublic{}, true
}
