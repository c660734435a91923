package egress

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Limits on host names (RFC 1035 2.3.4) and on raw input.
const (
	maxNameLen  = 253  // octets of a name, without the trailing dot
	maxLabelLen = 63   // octets of one label
	maxHostLen  = 1024 // bytes of a raw host before normalisation
)

// lookupProfile maps a name the way a resolver client should before a
// lookup (UTS #46 non-transitional processing, RFC 5891 section 5): case
// and width folding, NFKC, STD3 ASCII rules (only letters, digits and
// hyphen), ContextJ and the Bidi rule, and validation of existing
// Punycode labels. CheckHyphens is off, as in browsers, because names such
// as r3---sn-abc.googlevideo.com are in common use; validName enforces the
// RFC 1123 hyphen rule (no leading or trailing hyphen) itself. Lengths and
// empty labels are also checked by validName, after the one trailing dot a
// name may carry is removed (a Unicode full stop maps to '.' only here).
var lookupProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.VerifyDNSLength(false),
)

// normaliseName returns host as a lower-case ASCII name without a trailing
// dot, Unicode labels converted to Punycode, or an error saying why host is
// not a valid host name. It does not decide whether the name is an IPv4
// literal: see ParseTarget.
func normaliseName(host string) (string, error) {
	if host == "" {
		return "", malformed("empty host")
	}
	if len(host) > maxHostLen {
		return "", malformed("host longer than %d bytes", maxHostLen)
	}
	s, ascii := fastLDH(host)
	if !ascii {
		if err := checkASCIIBytes(host); err != nil {
			return "", err
		}
		if !utf8.ValidString(host) {
			// The IDNA library would map invalid bytes to U+FFFD and
			// encode that, giving a name that does not parse back.
			return "", malformed("invalid UTF-8 in host")
		}
		var err error
		s, err = lookupProfile.ToASCII(host)
		if err != nil {
			return "", malformed("invalid internationalised name: %v", err)
		}
	}
	s = strings.TrimSuffix(s, ".")
	if err := validName(s); err != nil {
		return "", err
	}
	return s, nil
}

// fastLDH is the common case, decided without the IDNA tables: host is
// plain ASCII letters, digits, hyphens and dots, with no Punycode label
// that would need validating. Then the IDNA mapping is only lower-casing,
// and the result is the same as lookupProfile's (a test checks this).
func fastLDH(host string) (string, bool) {
	upper := false
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
		case c >= 'A' && c <= 'Z':
			upper = true
		default:
			return "", false
		}
		if (i == 0 || host[i-1] == '.') && len(host)-i >= 4 &&
			(c == 'x' || c == 'X') && (host[i+1] == 'n' || host[i+1] == 'N') &&
			host[i+2] == '-' && host[i+3] == '-' {
			return "", false
		}
	}
	if upper {
		return strings.ToLower(host), true
	}
	return host, true
}

// checkASCIIBytes rejects ASCII bytes that no host name may hold, with a
// clearer error than the IDNA library's. Non-ASCII runes are left to IDNA.
func checkASCIIBytes(host string) error {
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 0x80, c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
		case c == '%':
			return malformed("percent sign in host (percent-encoding and zone identifiers are refused)")
		case c == '_':
			return malformed("underscore in host name")
		case c == 0:
			return malformed("NUL byte in host")
		case c <= ' ' || c == 0x7f:
			return malformed("space or control character %q in host", c)
		default:
			return malformed("character %q not allowed in a host name", c)
		}
	}
	return nil
}

// validName checks an already mapped ASCII name: 1 to 253 octets, labels
// of 1 to 63 letters, digits and hyphens that neither start nor end with
// a hyphen (RFC 1035, RFC 1123 2.1).
func validName(s string) error {
	if s == "" {
		return malformed("empty host")
	}
	if len(s) > maxNameLen {
		return malformed("name longer than %d octets", maxNameLen)
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return malformed("character %q not allowed in a host name", c)
			}
			continue
		}
		label := s[start:i]
		switch {
		case label == "":
			return malformed("empty label in name")
		case len(label) > maxLabelLen:
			return malformed("label longer than %d octets", maxLabelLen)
		case label[0] == '-' || label[len(label)-1] == '-':
			return malformed("label %q starts or ends with a hyphen", label)
		}
		start = i + 1
	}
	return nil
}

// isCanonicalName reports whether s is already what normaliseName returns
// for a name that is not an IPv4 literal: validName's rules, which allocate
// nothing for a valid name.
func isCanonicalName(s string) bool {
	return !endsInNumber(s) && validName(s) == nil
}
