package egress

import "strings"

// parseHostFast parses the common host in one pass and without the IDNA
// tables: plain ASCII letters, digits, hyphens and dots, with at most one
// trailing dot and no Punycode label, that is a valid name or an IPv4
// literal in any inet_aton spelling. For such a host the IDNA mapping is
// only lower-casing, so the result is the reference path's (normaliseName,
// then parseInetAton for a host that ends in a number); an IPv4 literal is
// parsed as written, since inet_aton reads hex digits in either case, and
// costs no allocation. It reports false for anything else, and never
// refuses: the reference path then decides and says why. A fuzz test
// (FuzzHostFastPath) checks that the two agree.
func parseHostFast(host string, port uint16) (Target, bool) {
	n := len(host)
	if n > 0 && host[n-1] == '.' {
		n--
	}
	if n == 0 || n > maxNameLen {
		return Target{}, false
	}
	host = host[:n]
	if c := host[0]; c >= '0' && c <= '9' {
		// Most hosts that start with a digit are IPv4 literals: parse
		// them as such first. One that inet_aton reads is one the
		// reference path reads the same way (its characters are letters,
		// digits and dots, so it is a valid name ending in a number),
		// provided no part is longer than a label may be.
		if a, err := parseInetAton(host); err == nil && (len(host) <= maxLabelLen || maxPartLen(host) <= maxLabelLen) {
			return Target{Addr: a, Port: port}, true
		}
	}
	upper := false
	start := 0 // of the current label
	for i := 0; i <= n; i++ {
		if i < n && host[i] != '.' {
			switch c := host[i]; {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			case c >= 'A' && c <= 'Z':
				upper = true
			default:
				return Target{}, false
			}
			continue
		}
		l := i - start
		if l == 0 || l > maxLabelLen || host[start] == '-' || host[i-1] == '-' {
			return Target{}, false
		}
		if l >= 4 && host[start]|0x20 == 'x' && host[start+1]|0x20 == 'n' && host[start+2] == '-' && host[start+3] == '-' {
			return Target{}, false // Punycode: IDNA validates it
		}
		start = i + 1
	}
	if endsInNumber(host) {
		a, err := parseInetAton(host)
		if err != nil {
			return Target{}, false
		}
		return Target{Addr: a, Port: port}, true
	}
	if upper {
		host = strings.ToLower(host)
	}
	return Target{Name: host, Port: port}, true
}

// maxPartLen is the length of the longest dot-separated part of s.
func maxPartLen(s string) int {
	longest := 0
	for s != "" {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			i = len(s)
		}
		longest = max(longest, i)
		s = s[min(i+1, len(s)):]
	}
	return longest
}
