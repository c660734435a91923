package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// openConfig is the most open policy the gate accepts: every public host,
// every private, shared and documentation range, and a port of loopback,
// with 192.0.2.2 and fd00::2 as the host's own addresses. The floor, and
// the rule for the host's own addresses, must still hold under it.
func openConfig() Config {
	return Config{TaskAllowlist: map[string][]string{
		"open": {"*", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "192.0.2.0/24",
			"fc00::/7", "2001:db8::/32", "127.0.0.1:8080", "[::1]:8080"},
		"wildcard": {"*"},
		"narrow":   {"search.example-corp.net", "93.184.216.34"},
	}, Local: testLocal}
}

// testLocal are the host's own addresses in the tests (beside loopback).
var testLocal = FixedAddrs{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("fd00::2")}

// metadataSpellings are ways to write a cloud metadata destination. Each
// must be refused as always blocked, whatever the allowlist.
var metadataSpellings = []string{
	// 169.254.169.254, IPv4 forms accepted by inet_aton.
	"169.254.169.254",
	"169.254.169.254.",
	"2852039166",
	"0xA9FEA9FE",
	"0xa9fea9fe",
	"0XA9FEA9FE",
	"0x00000000a9fea9fe",
	"025177524776",
	"0251.0376.0251.0376",
	"00251.000376.0251.0376",
	"0251.254.0251.0376",
	"169.254.43518",
	"169.254.0xa9fe",
	"169.254.0124776",
	"169.16689662",
	"0xa9.16689662",
	"0xa9.0xfe.0xa9.0xfe",
	"0XA9.0XFE.0XA9.0XFE",
	"169.0xfe.0251.254",
	"0xa9.0376.43518",
	"0x0000a9.254.169.254",
	"169.254.169.0376.",
	// Full-width digits and Unicode full stops, mapped by UTS #46.
	"１６９.２５４.１６９.２５４",
	"169。254。169。254",
	"169．254．169．254",
	"169｡254｡169｡254",
	"０ｘａ９ｆｅａ９ｆｅ",
	"169.254.169.254。",
	// IPv6 forms embedding it.
	"::ffff:169.254.169.254",
	"[::ffff:169.254.169.254]",
	"::ffff:a9fe:a9fe",
	"::FFFF:A9FE:A9FE",
	"0:0:0:0:0:ffff:a9fe:a9fe",
	"0000:0000:0000:0000:0000:ffff:169.254.169.254",
	"::169.254.169.254",
	"::a9fe:a9fe",
	"[::a9fe:a9fe]",
	"::ffff:0:169.254.169.254",
	"64:ff9b::169.254.169.254",
	"64:ff9b::a9fe:a9fe",
	"[64:ff9b::a9fe:a9fe]",
	"64:ff9b:1::a9fe:a9fe",
	"64:ff9b:1:a9fe:a9:fe00::",
	"64:ff9b:1:a9:fe:a9fe::",
	"64:ff9b:1::a9:fea9:fe00:0",
	"2002:a9fe:a9fe::",
	"2002:a9fe:a9fe::1",
	"2002:a9fe:a9fe:1234:5678:9abc:def0:1",
	"2001:0:4136:e378:8000:63bf:5601:5601",
	"2001:0:a9fe:a9fe::1",
	"2001:db8::5efe:a9fe:a9fe",
	"2001:db8::200:5efe:169.254.169.254",
	// Other metadata and link-local addresses.
	"169.254.170.2",
	"0xa9feaa02",
	"169.254.170.23",
	"169.254.0.23",
	"169.254.169.253",
	"169.254.0.1",
	"100.100.100.200",
	"1684301000",
	"0x646464c8",
	"::ffff:100.100.100.200",
	"64:ff9b::100.100.100.200",
	"192.0.0.192",
	"3221225664",
	"0300.0.0.0300",
	"168.63.129.16",
	"0xa83f8110",
	"2822734096",
	"fd00:ec2::254",
	"[fd00:ec2::254]",
	"FD00:EC2::254",
	"fd00:0ec2:0000::0254",
	"fd00:ec2::23",
	"fd00:ec2::253",
	"fd20:ce::254",
	"fe80::1",
	"[fe80::a9fe:a9fe]",
	"febf:ffff::1",
	"::ffff:169.254.0.1",
	// Metadata names.
	"metadata.google.internal",
	"METADATA.GOOGLE.INTERNAL",
	"Metadata.Google.Internal.",
	"metadata.google.internal.",
	"ｍｅｔａｄａｔａ.google.internal",
	"ＭＥＴＡＤＡＴＡ．ＧＯＯＧＬＥ．ＩＮＴＥＲＮＡＬ",
	"meta\u00addata.google.internal",
	"metadata\u3002google\u3002internal",
	"metadata.google.internal\u3002",
	"x.metadata.google.internal",
	"a.b.metadata.google.internal",
	"metadata",
	"metadata.",
	"METADATA",
	"metadata.goog",
	"computemetadata.metadata.goog",
	"instance-data",
	"instance-data.ec2.internal",
	"instance-data.eu-west-1.compute.internal",
	"api.metadata.cloud.ibm.com",
	"metadata.tencentyun.com",
	"metadata.platformequinix.com",
	"metadata.packet.net",
	"rancher-metadata",
}

// refusedSpellings are hosts that reach, or try to reach, a metadata
// address but are not valid literals: they must be refused as malformed.
var refusedSpellings = []string{
	"fe80::1%eth0",
	"[fe80::1%25eth0]",
	"fe80::1%25eth0",
	"[fe80::a9fe:a9fe%lo]",
	"169.254.169.254%eth0",
	"169%2e254%2e169%2e254",
	"169.254.169.254 ",
	" 169.254.169.254",
	"169.254.169.254\x00",
	"169.254.169.254\x00.example.com",
	"169.254.169.254\tjunk",
	"169.254.169.254..",
	".169.254.169.254",
	"169..254.169.254",
	"169.254.169.0x",
	"169.254.169.256",
	"169.254.65536",
	"0x1a9fea9fe",
	"4294967296",
	"08.1.1.1",
	"0251.0376.0251.0378",
	"1.169.254.169.254",
	"169.254.169.254.5",
	"169.254.169.254:80",
	"[169.254.169.254]",
	"[::ffff:169.254.169.254",
	"::ffff:0251.0376.0251.0376",
	"::ffff:0xa9fe.0xa9fe",
	"::ffff:2852039166",
	"meta\u200ddata.google.internal",
	"metadata..google.internal",
	"metadata.google.internal..",
	"metadata_google.internal",
	"metadata.google.internal/",
	"user@metadata.google.internal",
	"metadata.google.internal\\",
	"",
	".",
	"[]",
}

func TestMetadataSpellingsAlwaysBlocked(t *testing.T) {
	seed := mustCompile(t, seedConfig())
	open := mustCompile(t, openConfig())
	for _, h := range metadataSpellings {
		for _, task := range []string{"open", "wildcard", "narrow", "nope"} {
			d, _ := open.CheckHost(task, h, 80)
			wantBlocked(t, task+" "+h, d)
			d, _ = open.CheckHostPort(task, h, 80)
			if strings.Count(h, ":") == 1 {
				continue // "a:b" is read as host:port here
			}
			wantBlocked(t, task+" hostport "+h, d)
		}
		d, _ := seed.CheckHost("web_search", h, 443)
		wantBlocked(t, "seed "+h, d)
		// A resolved answer for an allowed name must not open it either.
		if tg, err := ParseTarget(h, 80); err == nil && tg.IsIP() {
			if !IsAlwaysBlocked(tg.Addr) {
				t.Errorf("IsAlwaysBlocked(%s) (from %q) = false", tg.Addr, h)
			}
			d, addrs := open.CheckResolved("wildcard", Target{Name: "example.com", Port: 80}, []netip.Addr{tg.Addr})
			wantBlocked(t, "resolved to "+h, d)
			if addrs != nil {
				t.Errorf("resolved to %q: returned addresses %v", h, addrs)
			}
		}
	}
}

func TestRefusedSpellingsMalformed(t *testing.T) {
	open := mustCompile(t, openConfig())
	for _, h := range refusedSpellings {
		if _, err := ParseTarget(h, 80); err == nil {
			t.Errorf("ParseTarget(%q) succeeded, want an error", h)
		}
		for _, task := range []string{"open", "wildcard"} {
			d, tg := open.CheckHost(task, h, 80)
			if d.Verdict != decision.Deny || !strings.Contains(d.Reason, " is malformed (") || !strings.HasSuffix(d.Reason, "): deny") {
				t.Errorf("%s %q: got %v %q, want a malformed-host denial", task, h, d.Verdict, d.Reason)
			}
			if tg != (Target{}) {
				t.Errorf("%s %q: target %+v returned with a malformed host", task, h, tg)
			}
		}
	}
}

// TestPositiveControls: ordinary public destinations stay allowed under
// "*" (deciding only: nothing is dialled).
func TestPositiveControls(t *testing.T) {
	open := mustCompile(t, openConfig())
	cases := []struct{ host, want string }{
		{"example.com", "example.com"},
		{"EXAMPLE.COM.", "example.com"},
		{"www.example.com", "www.example.com"},
		{"ｅｘａｍｐｌｅ.com", "example.com"},
		{"bücher.de", "xn--bcher-kva.de"},
		{"xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"r3---sn-abc.googlevideo.com", "r3---sn-abc.googlevideo.com"},
		{"metadata.example.com", "metadata.example.com"},
		{"instance-data.example.com", "instance-data.example.com"},
		{"notmetadata.google.internal", "notmetadata.google.internal"},
		{"169.254.169.254.nip.io", "169.254.169.254.nip.io"},
		{"a-b.c-d.example", "a-b.c-d.example"},
		{"93.184.216.34", "93.184.216.34"},
		{"0x5db8d822", "93.184.216.34"},
		{"1572395042", "93.184.216.34"},
		{"1.1.1.1", "1.1.1.1"},
		{"8.8.8.8", "8.8.8.8"},
		{"::ffff:8.8.8.8", "8.8.8.8"},
		{"2606:2800:220:1:248:1893:25c8:1946", "2606:2800:220:1:248:1893:25c8:1946"},
		{"[2606:2800:220:1:248:1893:25c8:1946]", "2606:2800:220:1:248:1893:25c8:1946"},
		{"2001:4860:4860::8888", "2001:4860:4860::8888"},
		{"64:ff9b::8.8.8.8", "64:ff9b::808:808"},
		{"2002:808:808::1", "2002:808:808::1"},
	}
	for _, c := range cases {
		d, tg := open.CheckHost("wildcard", c.host, 443)
		if d.Verdict != decision.Allow || d.Rule != "*" {
			t.Errorf("wildcard %q: got %v %q rule %q, want allow by \"*\"", c.host, d.Verdict, d.Reason, d.Rule)
		}
		if tg.Host() != c.want {
			t.Errorf("%q normalised to %q, want %q", c.host, tg.Host(), c.want)
		}
	}
}

// TestWildcardNeverReachesNonPublic: "*" refuses every non-public
// literal with the class in its reason (the host's own addresses with the
// rule for them); an IP/CIDR entry opens it.
func TestWildcardNeverReachesNonPublic(t *testing.T) {
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{
		"w":   {"*"},
		"lan": {"*", "10.0.0.0/8", "127.0.0.1:8080", "[fc00::/7]:443"},
	}})
	own := map[string]string{ // the host's own, and their class
		"127.0.0.1": "loopback", "0x7f000001": "loopback", "127.1": "loopback", "2130706433": "loopback",
		"017700000001": "loopback", "0": "unspecified", "0.0.0.0": "unspecified", "0.1.2.3": "unspecified",
		"::": "unspecified", "::1": "loopback", "[::1]": "loopback", "::ffff:127.0.0.1": "loopback",
		"::127.0.0.1": "loopback embedded IPv4 127.0.0.1", "192.0.2.2": "an address of this host's interfaces",
		"fd00::2": "an address of this host's interfaces", "::ffff:0:192.0.2.2": "an address of this host's interfaces embedded IPv4 192.0.2.2",
	}
	for host, class := range own {
		d, tg := g.CheckHost("w", host, 8080)
		wantDecision(t, host, d, decision.Deny, `task "w": host "`+tg.String()+`" denied: address `+tg.Addr.String()+
			` is this host's own (`+class+`): only an IP or CIDR entry naming the port reaches it, not entry "*"`, "*")
	}
	cases := []struct{ host, class string }{
		{"10.1.2.3", "private (RFC 1918)"},
		{"172.16.0.1", "private (RFC 1918)"},
		{"192.168.1.1", "private (RFC 1918)"},
		{"100.64.0.1", "shared CGNAT (RFC 6598)"},
		{"192.0.0.8", "IETF protocol assignment (RFC 6890)"},
		{"192.0.2.1", "documentation (RFC 5737)"},
		{"198.51.100.1", "documentation (RFC 5737)"},
		{"203.0.113.1", "documentation (RFC 5737)"},
		{"198.18.0.1", "benchmarking (RFC 2544)"},
		{"192.88.99.1", "6to4 relay anycast (RFC 7526)"},
		{"224.0.0.1", "multicast (RFC 5771)"},
		{"240.0.0.1", "reserved (RFC 1112)"},
		{"255.255.255.255", "broadcast (RFC 919)"},
		{"::10.0.0.1", "IPv4-compatible (deprecated, RFC 4291)"},
		{"64:ff9b::7f00:1", "loopback (RFC 1122) embedded IPv4 127.0.0.1"},
		{"64:ff9b::10.0.0.1", "private (RFC 1918) embedded IPv4 10.0.0.1"},
		{"64:ff9b:1::8.8.8.8", "local-use NAT64 (RFC 8215)"},
		{"2002:7f00:1::", "loopback (RFC 1122) embedded IPv4 127.0.0.1"},
		{"2002:c0a8:101::1", "private (RFC 1918) embedded IPv4 192.168.1.1"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "IETF protocol assignment (RFC 2928)"},
		{"2001:db8::1", "documentation (RFC 3849)"},
		{"3fff::1", "documentation (RFC 9637)"},
		{"fc00::1", "unique-local (RFC 4193)"},
		{"fd12:3456::1", "unique-local (RFC 4193)"},
		{"fec0::1", "site-local (deprecated, RFC 3879)"},
		{"ff02::1", "multicast (RFC 4291)"},
		{"100::1", "discard-only (RFC 6666)"},
		{"4000::1", "reserved (outside 2000::/3, RFC 4291)"},
		{"2600::5efe:a00:1", "private (RFC 1918) embedded IPv4 10.0.0.1"},
	}
	for _, c := range cases {
		d, tg := g.CheckHost("w", c.host, 8080)
		hp := tg.String()
		wantDecision(t, c.host, d, decision.Deny,
			`task "w": host "`+hp+`" denied: address `+tg.Addr.String()+` is `+c.class+` and wildcard entry "*" reaches public addresses only`, "*")
	}
	// Explicit IP/CIDR entries open non-public addresses, on their port.
	for _, c := range []struct {
		host string
		port uint16
		rule string
	}{
		{"10.1.2.3", 22, "10.0.0.0/8"},
		{"012.1.2.3", 22, "10.0.0.0/8"},
		{"::ffff:10.0.0.1", 22, "10.0.0.0/8"},
		{"127.0.0.1", 8080, "127.0.0.1:8080"},
		{"fd00::1", 443, "[fc00::/7]:443"},
	} {
		d, tg := g.CheckHost("lan", c.host, c.port)
		wantDecision(t, c.host, d, decision.Allow, `task "lan": host "`+tg.String()+`" allowed by allowlist entry "`+c.rule+`"`, c.rule)
	}
	for _, c := range []struct {
		host string
		port uint16
	}{{"127.0.0.1", 8081}, {"fd00::1", 80}} {
		d, _ := g.CheckHost("lan", c.host, c.port)
		if d.Allowed() || d.Rule != "*" {
			t.Errorf("lan %s port %d: %v, want a wildcard non-public denial", c.host, c.port, d)
		}
	}
}
