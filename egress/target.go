package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// Target is a destination as a client asked for it, normalised.
type Target struct {
	// Name is the normalised host name (lower case, no trailing dot,
	// IDNA Punycode), or "" when the host was an IP literal.
	Name string
	// Addr is the address when the host was an IP literal in any spelling.
	// An IPv4-mapped IPv6 literal is stored as IPv4; it never has a zone.
	Addr netip.Addr
	// Port is the destination port; 0 means none was given, and then only
	// allowlist entries without a port match.
	Port uint16
}

// IsIP reports whether the target is an IP literal.
func (t Target) IsIP() bool { return t.Name == "" && t.Addr.IsValid() }

// Host returns the name, or the address (IPv6 unbracketed).
func (t Target) Host() string {
	if t.Name != "" {
		return t.Name
	}
	if t.Addr.IsValid() {
		return t.Addr.String()
	}
	return ""
}

// String returns host:port with an IPv6 address in brackets, or the host
// alone (IPv6 still bracketed) when the port is 0.
func (t Target) String() string {
	h := t.Host()
	if t.Name == "" && t.Addr.Is6() {
		h = "[" + h + "]"
	}
	if t.Port == 0 {
		return h
	}
	return h + ":" + strconv.Itoa(int(t.Port))
}

// ParseTarget normalises host, a name or an IP literal in any spelling a
// resolver accepts (IPv6 optionally bracketed), and pairs it with port.
//
// Names are lower-cased, lose one trailing dot and are mapped to Punycode
// with UTS #46 lookup rules; a host whose last label is a number is an
// IPv4 literal in inet_aton syntax (decimal, octal, hexadecimal, one to
// four parts) or malformed. IPv6 literals are parsed strictly; a zone
// identifier ("fe80::1%eth0", "%25eth0") is refused. Every error wraps
// ErrMalformed.
func ParseTarget(host string, port uint16) (Target, error) {
	t, err := parseTarget(host, port)
	if err != nil {
		return Target{}, withHost(err, host)
	}
	return t, nil
}

func parseTarget(host string, port uint16) (Target, error) {
	if host == "" {
		return Target{}, malformed("empty host")
	}
	if len(host) > maxHostLen {
		return Target{}, malformed("host longer than %d bytes", maxHostLen)
	}
	if host[0] == '[' || strings.IndexByte(host, ':') >= 0 || strings.IndexByte(host, ']') >= 0 {
		a, err := parseIPv6Literal(host)
		if err != nil {
			return Target{}, err
		}
		return Target{Addr: a, Port: port}, nil
	}
	name, err := normaliseName(host)
	if err != nil {
		return Target{}, err
	}
	if endsInNumber(name) {
		a, err := parseInetAton(name)
		if err != nil {
			return Target{}, malformed("ends in a number but is not an IPv4 address (%s)", causeOf(err))
		}
		return Target{Addr: a, Port: port}, nil
	}
	return Target{Name: name, Port: port}, nil
}

// parseIPv6Literal parses an IPv6 address, bracketed or not, refusing
// zones. An IPv4-mapped address is returned as IPv4.
func parseIPv6Literal(host string) (netip.Addr, error) {
	s := host
	if s[0] == '[' {
		if len(s) < 2 || s[len(s)-1] != ']' {
			return netip.Addr{}, malformed("unbalanced brackets in host")
		}
		s = s[1 : len(s)-1]
	}
	if strings.ContainsAny(s, "[]") {
		return netip.Addr{}, malformed("unbalanced brackets in host")
	}
	if strings.IndexByte(s, '%') >= 0 {
		return netip.Addr{}, errZone()
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, malformed("invalid IPv6 address")
	}
	if !a.Is6() {
		return netip.Addr{}, malformed("brackets hold only IPv6 addresses")
	}
	return a.Unmap(), nil
}

// SplitHostPort parses hostport, "host", "host:port", "[ipv6]" or
// "[ipv6]:port" as in a CONNECT request line, a Host header or a URL
// authority, and normalises the host as ParseTarget does. defaultPort is
// used when no port is given (or the port is empty, as RFC 3986 allows).
// An IPv6 address with a port must be bracketed; unbracketed, the whole
// string is taken as the address.
func SplitHostPort(hostport string, defaultPort uint16) (Target, error) {
	t, err := splitHostPort(hostport, defaultPort)
	if err != nil {
		return Target{}, withHost(err, hostport)
	}
	return t, nil
}

func splitHostPort(hostport string, defaultPort uint16) (Target, error) {
	if hostport == "" {
		return Target{}, malformed("empty host")
	}
	if len(hostport) > maxHostLen+6 {
		return Target{}, malformed("host longer than %d bytes", maxHostLen)
	}
	host, portStr, hasPort := hostport, "", false
	switch {
	case hostport[0] == '[':
		i := strings.IndexByte(hostport, ']')
		if i < 0 {
			return Target{}, malformed("unbalanced brackets in host")
		}
		host = hostport[:i+1]
		rest := hostport[i+1:]
		if rest != "" {
			if rest[0] != ':' {
				return Target{}, malformed("unexpected text after ']'")
			}
			portStr, hasPort = rest[1:], true
		}
	default:
		// One colon separates a port; more make an unbracketed IPv6
		// address, taken whole.
		if i := strings.IndexByte(hostport, ':'); i >= 0 && strings.IndexByte(hostport[i+1:], ':') < 0 {
			host, portStr, hasPort = hostport[:i], hostport[i+1:], true
		}
	}
	port := defaultPort
	if hasPort && portStr != "" {
		p, err := parsePort(portStr)
		if err != nil {
			return Target{}, err
		}
		port = p
	}
	return parseTarget(host, port)
}

// parsePort parses a decimal port 1-65535 of at most five digits.
func parsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 {
		return 0, malformed("invalid port %q", s)
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, malformed("invalid port %q", s)
		}
		v = v*10 + int(s[i]-'0')
	}
	if v == 0 || v > 65535 {
		return 0, malformed("port %q out of range 1-65535", s)
	}
	return uint16(v), nil
}
