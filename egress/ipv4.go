package egress

import (
	"net/netip"
	"strings"
)

// endsInNumber reports whether the last label of a normalised name is a
// number (all decimal digits, or "0x" and hexadecimal digits). Such a host
// is an IPv4 literal or malformed, never a name: no top-level domain is
// numeric, and a resolver would read it as an address (the WHATWG URL
// Standard's "ends in a number" rule).
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			if !isHex(last[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseInetAton parses an IPv4 address in every form that inet_aton(3)
// and so glibc's getaddrinfo accept: one to four dot-separated parts, each
// decimal, octal (leading 0) or hexadecimal (leading 0x); every part but the
// last is one byte, and the last fills the remaining bytes (a.b.c.d,
// a.b.c16, a.b24, a32). Examples of 169.254.169.254: 2852039166,
// 0xA9FEA9FE, 0251.0376.0251.0376, 169.254.43518, 169.16689662.
//
// Hand-written because no maintained Go library accepts these legacy
// forms (netip.ParseAddr accepts only four decimal bytes, on purpose), yet
// every one of them reaches the address when a client hands it to the C
// library. It is stricter than glibc in one way only: glibc ignores
// anything after a space, and a host with a space is refused before this.
func parseInetAton(s string) (netip.Addr, error) {
	var parts [4]uint64
	fields := strings.Split(s, ".")
	for i, f := range fields {
		if i == 4 {
			return netip.Addr{}, malformed("IPv4 address with more than four parts")
		}
		v, err := parseAtonNumber(f)
		if err != nil {
			return netip.Addr{}, err
		}
		parts[i] = v
	}
	n := len(fields)
	for i := range n - 1 {
		if parts[i] > 0xff {
			return netip.Addr{}, malformed("IPv4 address part %d out of range", i+1)
		}
	}
	last := parts[n-1]
	if last > 1<<(8*(5-n))-1 {
		return netip.Addr{}, malformed("IPv4 address last part out of range")
	}
	var u uint32
	for i := range n - 1 {
		u |= uint32(parts[i]) << (24 - 8*i)
	}
	u |= uint32(last)
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}), nil
}

// parseAtonNumber parses one part of an inet_aton address: C integer
// syntax with base prefix, at most 32 bits.
func parseAtonNumber(s string) (uint64, error) {
	if s == "" {
		return 0, malformed("empty part in IPv4 address")
	}
	base := uint64(10)
	digits := s
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, digits = 16, s[2:]
		if digits == "" {
			return 0, malformed("hexadecimal IPv4 part without digits")
		}
	case len(s) >= 2 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	var v uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, malformed("invalid character %q in IPv4 address", c)
		}
		if d >= base {
			return 0, malformed("digit %q out of range for base %d in IPv4 address", c, base)
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, malformed("IPv4 address part out of range")
		}
	}
	return v, nil
}
