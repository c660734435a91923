package egress

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParseTargetNames(t *testing.T) {
	cases := []struct{ in, want string }{
		{"example.com", "example.com"},
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"EXAMPLE.com.", "example.com"},
		{"localhost", "localhost"},
		{"a", "a"},
		{"1a.example", "1a.example"},
		{"123.example.com", "123.example.com"},
		{"r3---sn-apo3qvuoxuxbt-j5pe.googlevideo.com", "r3---sn-apo3qvuoxuxbt-j5pe.googlevideo.com"},
		// IDNA (UTS #46 non-transitional) to Punycode.
		{"bücher.de", "xn--bcher-kva.de"},
		{"BÜCHER.de", "xn--bcher-kva.de"},
		{"xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"XN--BCHER-KVA.DE", "xn--bcher-kva.de"},
		{"faß.de", "xn--fa-hia.de"},
		{"例え.テスト", "xn--r8jz45g.xn--zckzah"},
		{"münchen.de。", "xn--mnchen-3ya.de"},
		// Width and compatibility folding: confusable spellings of ASCII
		// names become the ASCII name.
		{"ｅｘａｍｐｌｅ.com", "example.com"},
		{"ＥＸＡＭＰＬＥ．ＣＯＭ", "example.com"},
		{"exam\u00adple.com", "example.com"},
		{"example\u3002com", "example.com"},
		// A look-alike from another script is a different name, never the
		// ASCII one: it cannot match an ASCII allowlist entry.
		{"аpple.com", "xn--pple-43d.com"},
		{"gооgle.com", "xn--ggle-55da.com"},
		{"example\u2044com", "xn--examplecom-896e"}, // fraction slash is a letter here, not a '/'
		// A last label that is not a number is a name.
		{"example.0xg", "example.0xg"},
		{"example.0x1g", "example.0x1g"},
		{"0x.example", "0x.example"},
	}
	for _, c := range cases {
		tg, err := ParseTarget(c.in, 443)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", c.in, err)
			continue
		}
		if tg.Name != c.want || tg.Addr.IsValid() || tg.Port != 443 {
			t.Errorf("ParseTarget(%q) = %+v, want name %q", c.in, tg, c.want)
		}
	}
}

func TestParseTargetMalformed(t *testing.T) {
	long := ""
	for range 64 {
		long += "a"
	}
	name254 := ""
	for len(name254) < 250 {
		name254 += "abcdefghi."
	}
	name254 += "abcd"
	cases := []struct{ in, cause string }{
		{"", "empty host"},
		{".", "empty host"},
		{"..", "empty label in name"},
		{".example.com", "empty label in name"},
		{"example..com", "empty label in name"},
		{"example.com..", "empty label in name"},
		{"exa mple.com", `space or control character ' ' in host`},
		{"example.com\x00", "NUL byte in host"},
		{"exa_mple.com", "underscore in host name"},
		{"_dmarc.example.com", "underscore in host name"},
		{"ex%61mple.com", "percent sign in host (percent-encoding and zone identifiers are refused)"},
		{"example.com/", `character '/' not allowed in a host name`},
		{"user@example.com", `character '@' not allowed in a host name`},
		{"-example.com", `label "-example" starts or ends with a hyphen`},
		{"example-.com", `label "example-" starts or ends with a hyphen`},
		{long + ".com", "label longer than 63 octets"},
		{name254, "name longer than 253 octets"},
		{"xn--.com", ""},
		{"xn--a.com", ""},
		{"xn--abc.com", ""},
		{"a\u05d0.com", ""},          // Bidi rule
		{"a\u200db.com", ""},         // ContextJ: zero-width joiner
		{"example.com\uff1a443", ""}, // full-width colon (STD3)
		{"1.2.3.4.5", "ends in a number but is not an IPv4 address (IPv4 address with more than four parts)"},
		{"example.123", "ends in a number but is not an IPv4 address (digit 'e' out of range for base 10 in IPv4 address)"},
		{"fe80::1%eth0", "zone identifiers are refused"},
		{"[fe80::1%25eth0]", "zone identifiers are refused"},
		{"[::1", "unbalanced brackets in host"},
		{"::1]", "unbalanced brackets in host"},
		{"[[::1]]", "unbalanced brackets in host"},
		{"[1.2.3.4]", "brackets hold only IPv6 addresses"},
		{"1:2", "invalid IPv6 address"},
		{":::", "invalid IPv6 address"},
	}
	for _, c := range cases {
		_, err := ParseTarget(c.in, 80)
		if err == nil {
			t.Errorf("ParseTarget(%q) succeeded", c.in)
			continue
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseTarget(%q): %v does not match ErrMalformed", c.in, err)
		}
		var he *HostError
		if !errors.As(err, &he) || he.Host != clipped(c.in) {
			t.Errorf("ParseTarget(%q): error %v does not carry the host", c.in, err)
			continue
		}
		if c.cause != "" && he.Cause != c.cause {
			t.Errorf("ParseTarget(%q) cause = %q, want %q", c.in, he.Cause, c.cause)
		}
	}
	_, err := ParseTarget("fe80::1%eth0", 80)
	if !errors.Is(err, ErrZone) {
		t.Errorf("zone error %v does not match ErrZone", err)
	}
	if got, want := err.Error(), `egress: malformed host "fe80::1%eth0": zone identifiers are refused`; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}

func TestParseTargetIPv6(t *testing.T) {
	cases := []struct{ in, want string }{
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"2001:DB8::1", "2001:db8::1"},
		{"[2001:db8:0:0:0:0:0:1]", "2001:db8::1"},
		{"::ffff:1.2.3.4", "1.2.3.4"},
		{"[::ffff:102:304]", "1.2.3.4"},
		{"64:ff9b::1.2.3.4", "64:ff9b::102:304"},
	}
	for _, c := range cases {
		tg, err := ParseTarget(c.in, 443)
		if err != nil || tg.Name != "" || tg.Addr != netip.MustParseAddr(c.want) {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %s", c.in, tg, err, c.want)
		}
	}
}

func TestSplitHostPort(t *testing.T) {
	cases := []struct {
		in     string
		def    uint16
		host   string
		port   uint16
		errStr string
	}{
		{"example.com:443", 80, "example.com", 443, ""},
		{"example.com", 80, "example.com", 80, ""},
		{"example.com", 0, "example.com", 0, ""},
		{"example.com:", 80, "example.com", 80, ""},
		{"EXAMPLE.com.:8443", 80, "example.com", 8443, ""},
		{"93.184.216.34:80", 443, "93.184.216.34", 80, ""},
		{"0xA9FEA9FE:80", 443, "169.254.169.254", 80, ""},
		{"[::1]:8080", 80, "::1", 8080, ""},
		{"[::1]", 80, "::1", 80, ""},
		{"[::1]:", 80, "::1", 80, ""},
		{"::1", 80, "::1", 80, ""},
		{"2001:db8::1", 443, "2001:db8::1", 443, ""},
		{"[::ffff:169.254.169.254]:80", 443, "169.254.169.254", 80, ""},
		{"example.com:00443", 80, "example.com", 443, ""},
		{"example.com:65535", 80, "example.com", 65535, ""},
		{"", 80, "", 0, `egress: malformed host "": empty host`},
		{"example.com:0", 80, "", 0, `egress: malformed host "example.com:0": port "0" out of range 1-65535`},
		{"example.com:65536", 80, "", 0, `egress: malformed host "example.com:65536": port "65536" out of range 1-65535`},
		{"example.com:+80", 80, "", 0, `egress: malformed host "example.com:+80": invalid port "+80"`},
		{"example.com:0x50", 80, "", 0, `egress: malformed host "example.com:0x50": invalid port "0x50"`},
		{"example.com:443 ", 80, "", 0, `egress: malformed host "example.com:443 ": invalid port "443 "`},
		{"example.com:000443", 80, "", 0, `egress: malformed host "example.com:000443": invalid port "000443"`},
		{"example.com:80:80", 80, "", 0, `egress: malformed host "example.com:80:80": invalid IPv6 address`},
		{"[::1]x", 80, "", 0, `egress: malformed host "[::1]x": unexpected text after ']'`},
		{"[::1", 80, "", 0, `egress: malformed host "[::1": unbalanced brackets in host`},
		{"[fe80::1%25eth0]:443", 80, "", 0, `egress: malformed host "[fe80::1%25eth0]:443": zone identifiers are refused`},
		{":443", 80, "", 0, `egress: malformed host ":443": empty host`},
	}
	for _, c := range cases {
		tg, err := SplitHostPort(c.in, c.def)
		if c.errStr != "" {
			if err == nil || err.Error() != c.errStr {
				t.Errorf("SplitHostPort(%q) = %+v, %v; want error %q", c.in, tg, err, c.errStr)
			}
			continue
		}
		if err != nil || tg.Host() != c.host || tg.Port != c.port {
			t.Errorf("SplitHostPort(%q, %d) = %+v, %v; want %s port %d", c.in, c.def, tg, err, c.host, c.port)
		}
	}
}

func TestTargetString(t *testing.T) {
	cases := []struct {
		t    Target
		want string
	}{
		{Target{Name: "example.com", Port: 443}, "example.com:443"},
		{Target{Name: "example.com"}, "example.com"},
		{Target{Addr: netip.MustParseAddr("1.2.3.4"), Port: 80}, "1.2.3.4:80"},
		{Target{Addr: netip.MustParseAddr("::1"), Port: 80}, "[::1]:80"},
		{Target{Addr: netip.MustParseAddr("2001:db8::1")}, "[2001:db8::1]"},
		{Target{}, ""},
	}
	for _, c := range cases {
		if got := c.t.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.t, got, c.want)
		}
	}
}
