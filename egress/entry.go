package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// entryKind is the shape of an allowlist entry.
type entryKind uint8

const (
	kindExact  entryKind = iota + 1 // "host.example.com"
	kindSuffix                      // "*.example.com": subdomains only
	kindAny                         // "*": any public host
	kindPrefix                      // IP literal or CIDR
)

// entry is a parsed allowlist or always-blocked entry.
type entry struct {
	raw    string
	kind   entryKind
	name   string       // kindExact: the name; kindSuffix: the apex
	prefix netip.Prefix // kindPrefix; a single address is a /32 or /128
	port   uint16       // 0: any port
}

// parseEntry parses an allowlist entry: "host", "*.suffix", "*", an IP
// address or CIDR, each optionally followed by ":port" (an IPv6 address
// or CIDR with a port is written in brackets, "[2001:db8::/32]:443").
//
// IP entries are parsed strictly (four decimal bytes without leading
// zeros, canonical IPv6, CIDRs without host bits): a policy is written by
// a person, and "010.0.0.1" would mean 8.0.0.1 to a resolver, so it is
// rejected rather than guessed at.
func parseEntry(s string) (entry, error) {
	e := entry{raw: s}
	if s == "" {
		return e, errors.New("empty entry")
	}
	host, port, err := splitEntryPort(s)
	if err != nil {
		return e, err
	}
	e.port = port
	switch {
	case host == "*":
		e.kind = kindAny
		return e, nil
	case strings.HasPrefix(host, "*."):
		apex := host[2:]
		if strings.IndexByte(apex, '*') >= 0 {
			return e, errors.New("'*' may only be the whole entry or its first label")
		}
		if strings.ContainsAny(apex, ":/[]") {
			return e, errors.New("a wildcard entry takes a host name, not an address")
		}
		name, err := normaliseName(apex)
		if err != nil {
			return e, errors.New(causeOf(err))
		}
		if endsInNumber(name) {
			return e, errors.New("a wildcard entry takes a host name, not an address")
		}
		e.kind, e.name = kindSuffix, name
		return e, nil
	case strings.IndexByte(host, '*') >= 0:
		return e, errors.New("'*' may only be the whole entry or its first label")
	case strings.IndexByte(host, '/') >= 0:
		p, err := parseEntryPrefix(host)
		if err != nil {
			return e, err
		}
		e.kind, e.prefix = kindPrefix, p
		return e, nil
	case strings.IndexByte(host, ':') < 0:
		name, err := normaliseName(host)
		if err != nil {
			return e, errors.New(causeOf(err))
		}
		if !endsInNumber(name) {
			e.kind, e.name = kindExact, name
			return e, nil
		}
	}
	// An IPv6 address, or a name that is an IPv4 address.
	a, err := parseEntryAddr(host)
	if err != nil {
		return e, err
	}
	e.kind, e.prefix = kindPrefix, netip.PrefixFrom(a, a.BitLen())
	return e, nil
}

// splitEntryPort splits an optional ":port" off an entry.
func splitEntryPort(s string) (string, uint16, error) {
	if s[0] == '[' {
		i := strings.IndexByte(s, ']')
		if i < 0 {
			return "", 0, errors.New("unbalanced brackets")
		}
		host, rest := s[1:i], s[i+1:]
		if rest == "" {
			return host, 0, nil
		}
		if rest[0] != ':' {
			return "", 0, errors.New("unexpected text after ']'")
		}
		p, err := parseEntryPortNumber(rest[1:])
		return host, p, err
	}
	if strings.Count(s, ":") != 1 {
		return s, 0, nil // no port, or an unbracketed IPv6 address
	}
	i := strings.IndexByte(s, ':')
	p, err := parseEntryPortNumber(s[i+1:])
	return s[:i], p, err
}

func parseEntryPortNumber(s string) (uint16, error) {
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("port %q has a leading zero", s)
	}
	p, err := parsePort(s)
	if err != nil {
		return 0, errors.New(causeOf(err))
	}
	return p, nil
}

// parseEntryAddr parses an IP entry in canonical form.
func parseEntryAddr(s string) (netip.Addr, error) {
	if strings.IndexByte(s, '%') >= 0 {
		return netip.Addr{}, errors.New("zone identifiers are refused")
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("not a host name or an IP address in standard form (a.b.c.d or IPv6): %q", s)
	}
	return a.Unmap(), nil
}

// parseEntryPrefix parses a CIDR entry; an IPv4-mapped IPv6 prefix of at
// least 96 bits is turned into the IPv4 prefix it stands for.
func parseEntryPrefix(s string) (netip.Prefix, error) {
	if strings.IndexByte(s, '%') >= 0 {
		return netip.Prefix{}, errors.New("zone identifiers are refused")
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q (want a.b.c.d/n or ipv6/n)", s)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("CIDR %q has host bits set (did you mean %s?)", s, p.Masked())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

// parseBlockedEntry parses an alwaysBlocked entry: a host name (which
// blocks its subdomains too), an IP address or a CIDR, without a port.
func parseBlockedEntry(s string) (entry, error) {
	e, err := parseEntry(s)
	if err != nil {
		return e, err
	}
	switch {
	case e.port != 0:
		return e, errors.New("alwaysBlocked entries take no port (a destination is blocked on every port)")
	case e.kind == kindAny:
		return e, errors.New("'*' cannot be always blocked (deny is already the default)")
	case e.kind == kindSuffix:
		return e, fmt.Errorf("write %q: a blocked name blocks its subdomains too", e.name)
	}
	return e, nil
}

// ValidateEntry reports whether entry is a well-formed allowlist entry:
// an exact host name, "*.suffix", "*", an IP address or a CIDR, each
// optionally with ":port" (IPv6 in brackets: "[::1]:443"). It does not
// say whether the entry is always blocked; see IsAlwaysBlockedEntry.
func ValidateEntry(entry string) error {
	if _, err := parseEntry(entry); err != nil {
		return fmt.Errorf("egress: allowlist entry %q: %w", entry, err)
	}
	return nil
}

// ValidateBlockedEntry reports whether entry is a well-formed
// alwaysBlocked entry: a host name (which blocks its subdomains too), an IP
// address or a CIDR, without a port.
func ValidateBlockedEntry(entry string) error {
	if _, err := parseBlockedEntry(entry); err != nil {
		return fmt.Errorf("egress: alwaysBlocked entry %q: %w", entry, err)
	}
	return nil
}

// IsAlwaysBlockedEntry reports whether a well-formed allowlist entry can
// reach nothing but destinations of the built-in always-blocked floor
// (metadata names and their subdomains, metadata and link-local addresses
// and CIDRs inside them, IPv6 forms embedding them), so that a policy
// validator can reject it. It is false for a malformed entry and for an
// entry that only overlaps the floor ("*", "0.0.0.0/0"): the floor is
// checked first on every decision anyway.
func IsAlwaysBlockedEntry(entry string) bool {
	e, err := parseEntry(entry)
	if err != nil {
		return false
	}
	return floor.coversEntry(e)
}

// coversEntry reports whether every destination e can reach is blocked.
func (t *blockTable) coversEntry(e entry) bool {
	switch e.kind {
	case kindExact, kindSuffix:
		_, ok := t.name(e.name)
		return ok
	case kindPrefix:
		return t.coversPrefix(e.prefix)
	}
	return false
}

// contiguousEmbeddings are the IPv6 prefixes whose addresses carry an IPv4
// address in one run of bits starting at off: a CIDR inside one maps to an
// IPv4 CIDR, which the floor may cover.
var contiguousEmbeddings = []struct {
	prefix netip.Prefix
	off    int
}{
	{netip.MustParsePrefix("::/96"), 96},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), 96},
	{netip.MustParsePrefix("64:ff9b::/96"), 96},
	{netip.MustParsePrefix("2002::/16"), 16},
}

// coversPrefix reports whether every address of p is blocked.
func (t *blockTable) coversPrefix(p netip.Prefix) bool {
	if p.IsSingleIP() {
		_, _, ok := t.addr(p.Addr())
		return ok
	}
	if _, ok := t.addrs.lookupMax(p.Addr(), p.Bits()); ok {
		return true
	}
	if !p.Addr().Is6() {
		return false
	}
	for _, ce := range contiguousEmbeddings {
		if ce.prefix.Bits() > p.Bits() || !ce.prefix.Contains(p.Addr()) {
			continue
		}
		b := p.Addr().As16()
		off := ce.off / 8
		a4 := netip.AddrFrom4([4]byte{b[off], b[off+1], b[off+2], b[off+3]})
		n := min(max(p.Bits()-ce.off, 0), 32)
		if _, ok := t.addrs.lookupMax(a4, n); ok {
			return true
		}
	}
	return false
}
