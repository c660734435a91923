package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// TestHostOwnAddresses is finding 9 of issue 11 as a table: loopback and
// the host's own addresses are reached only through an IP or CIDR entry
// naming the port; never through a name, never through an entry without
// a port, never through a catch-all range (which Compile refuses).
func TestHostOwnAddresses(t *testing.T) {
	// 192.0.2.2 and fd00::2 are the host's own (testLocal); so is
	// 93.184.216.34 for the task "public-host", a host with a public address.
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{
		"name":    {"svc.example", "*.wild.example", "*"},
		"port":    {"127.0.0.1:8080", "svc.example"},
		"range":   {"127.0.0.0/8:8080", "10.0.0.0/8", "[fd00::/8]:443"},
		"own":     {"192.0.2.0/24", "192.0.2.0/24:22", "0.0.0.0:9"},
		"nothing": {"svc.example"},
	}, Local: FixedAddrs(append(slices.Clone(testLocal), netip.MustParseAddr("10.0.0.5")))})
	const only = `: only an IP or CIDR entry naming the port reaches it, not entry `
	type want struct {
		verdict decision.Verdict
		reason  string
		dial    []netip.Addr
	}
	deny := func(reason string) want { return want{decision.Deny, reason, nil} }
	allow := func(reason string, dial ...string) want { return want{decision.Allow, reason, addrs(dial...)} }
	cases := []struct {
		what, task, host string
		port             uint16
		answer           []netip.Addr // for a name
		want             want
	}{
		{"exact name resolving to 127.0.0.1", "name", "svc.example", 8080, addrs("127.0.0.1"),
			deny(`task "name": host "svc.example:8080" denied: it resolves to 127.0.0.1, this host's own (loopback)` + only + `"svc.example"`)},
		{"exact name resolving to 127.0.0.1, any port", "name", "svc.example", 22, addrs("127.0.0.1"),
			deny(`task "name": host "svc.example:22" denied: it resolves to 127.0.0.1, this host's own (loopback)` + only + `"svc.example"`)},
		{"exact name resolving to ::1", "name", "svc.example", 22, addrs("::1"),
			deny(`task "name": host "svc.example:22" denied: it resolves to ::1, this host's own (loopback)` + only + `"svc.example"`)},
		{"exact name resolving to 0.0.0.0", "name", "svc.example", 22, addrs("0.0.0.0"),
			deny(`task "name": host "svc.example:22" denied: it resolves to 0.0.0.0, this host's own (unspecified)` + only + `"svc.example"`)},
		{"exact name resolving to a host address", "name", "svc.example", 22, addrs("192.0.2.2"),
			deny(`task "name": host "svc.example:22" denied: it resolves to 192.0.2.2, this host's own (an address of this host's interfaces)` + only + `"svc.example"`)},
		{"exact name resolving to a host address, IPv6", "name", "svc.example", 22, addrs("fd00::2"),
			deny(`task "name": host "svc.example:22" denied: it resolves to fd00::2, this host's own (an address of this host's interfaces)` + only + `"svc.example"`)},
		{"exact name resolving to a private address that is not the host's", "name", "svc.example", 22, addrs("10.0.0.6"),
			allow(`task "name": host "svc.example:22" allowed by allowlist entry "svc.example"`, "10.0.0.6")},
		{"wildcard name resolving to a host address", "name", "a.wild.example", 443, addrs("192.0.2.2"),
			deny(`task "name": host "a.wild.example:443" denied: it resolves to 192.0.2.2, this host's own (an address of this host's interfaces)` + only + `"*.wild.example"`)},
		{"a name's host-own answer dropped, the rest kept", "name", "svc.example", 443, addrs("127.0.0.1", "10.0.0.6"),
			allow(`task "name": host "svc.example:443" allowed by allowlist entry "svc.example" (1 of 2 resolved addresses dropped: non-public or this host's own)`, "10.0.0.6")},
		{"wildcard literal 127.0.0.1", "name", "127.0.0.1", 80, nil,
			deny(`task "name": host "127.0.0.1:80" denied: address 127.0.0.1 is this host's own (loopback)` + only + `"*"`)},
		{"entry 127.0.0.1:8080, its port", "port", "127.0.0.1", 8080, nil,
			allow(`task "port": host "127.0.0.1:8080" allowed by allowlist entry "127.0.0.1:8080"`, "127.0.0.1")},
		{"entry 127.0.0.1:8080, another port", "port", "127.0.0.1", 8081, nil,
			deny(`task "port": host "127.0.0.1:8081" denied by default: not in the task's egress allowlist`)},
		{"entry 127.0.0.1:8080, a name resolving to it on its port", "port", "svc.example", 8080, addrs("127.0.0.1"),
			allow(`task "port": host "svc.example:8080" allowed by allowlist entry "svc.example"`, "127.0.0.1")},
		{"entry 127.0.0.1:8080, a name resolving to it on another port", "port", "svc.example", 22, addrs("127.0.0.1"),
			deny(`task "port": host "svc.example:22" denied: it resolves to 127.0.0.1, this host's own (loopback)` + only + `"svc.example"`)},
		{"entry 127.0.0.0/8:8080", "range", "127.0.0.5", 8080, nil,
			allow(`task "range": host "127.0.0.5:8080" allowed by allowlist entry "127.0.0.0/8:8080"`, "127.0.0.5")},
		{"entry 10.0.0.0/8 without a port, the host's 10.0.0.5", "range", "10.0.0.5", 22, nil,
			deny(`task "range": host "10.0.0.5:22" denied: address 10.0.0.5 is this host's own (an address of this host's interfaces)` + only + `"10.0.0.0/8"`)},
		{"entry 10.0.0.0/8 without a port, another address", "range", "10.0.0.6", 22, nil,
			allow(`task "range": host "10.0.0.6:22" allowed by allowlist entry "10.0.0.0/8"`, "10.0.0.6")},
		{"entry [fd00::/8]:443, the host's fd00::2", "range", "fd00::2", 443, nil,
			allow(`task "range": host "[fd00::2]:443" allowed by allowlist entry "[fd00::/8]:443"`, "fd00::2")},
		{"entry 192.0.2.0/24:22 beside one without a port", "own", "192.0.2.2", 22, nil,
			allow(`task "own": host "192.0.2.2:22" allowed by allowlist entry "192.0.2.0/24:22"`, "192.0.2.2")},
		{"entry 192.0.2.0/24 without a port", "own", "192.0.2.2", 80, nil,
			deny(`task "own": host "192.0.2.2:80" denied: address 192.0.2.2 is this host's own (an address of this host's interfaces)` + only + `"192.0.2.0/24"`)},
		{"an IPv4-mapped host address", "own", "::ffff:192.0.2.2", 80, nil,
			deny(`task "own": host "192.0.2.2:80" denied: address 192.0.2.2 is this host's own (an address of this host's interfaces)` + only + `"192.0.2.0/24"`)},
		{"entry 0.0.0.0:9", "own", "0.0.0.0", 9, nil,
			allow(`task "own": host "0.0.0.0:9" allowed by allowlist entry "0.0.0.0:9"`, "0.0.0.0")},
		{"no entry at all", "nothing", "127.0.0.1", 80, nil,
			deny(`task "nothing": host "127.0.0.1:80" denied by default: not in the task's egress allowlist`)},
	}
	for _, c := range cases {
		d, tg := g.CheckHost(c.task, c.host, c.port)
		var dial []netip.Addr
		if d.Allowed() {
			d, dial = g.CheckResolved(c.task, tg, c.answer)
		}
		wantDecision(t, c.what, d, c.want.verdict, c.want.reason, d.Rule)
		if !slices.Equal(dial, c.want.dial) {
			t.Errorf("%s: dial %v, want %v", c.what, dial, c.want.dial)
		}
	}
}

// TestHostOwnPublicAddress: on a host with a public address, "*" does not
// reach it, by name or as a literal.
func TestHostOwnPublicAddress(t *testing.T) {
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{"t": {"*"}}, Local: FixedAddrs(addrs("93.184.216.34"))})
	d, _ := g.CheckHost("t", "93.184.216.34", 443)
	if d.Allowed() || !strings.Contains(d.Reason, "is this host's own (an address of this host's interfaces)") {
		t.Errorf("literal: %v", d)
	}
	d, tg := g.CheckHost("t", "www.example", 443)
	if !d.Allowed() {
		t.Fatal(d)
	}
	if d, dial := g.CheckResolved("t", tg, addrs("93.184.216.34")); d.Allowed() || dial != nil {
		t.Errorf("name: %v %v", d, dial)
	}
}

// TestReachRefusedEntries: Compile and CheckReach refuse the entries the
// rule would make meaningless, each with a hint; every other entry passes.
func TestReachRefusedEntries(t *testing.T) {
	refused := map[string]string{
		"0.0.0.0/0":        "catch-all",
		"::/0":             "catch-all",
		"0.0.0.0/0:443":    "catch-all",
		"[::/0]:443":       "catch-all",
		"0.0.0.0/1":        "catch-all",
		"128.0.0.0/1":      "catch-all",
		"0.0.0.0/8":        "catch-all", // holds 0.0.0.0/32, unspecified
		"10.0.0.0/7":       "catch-all", // private 10/8 and public 11/8
		"169.0.0.0/8":      "catch-all", // holds 169.254.0.0/16
		"172.0.0.0/8":      "catch-all",
		"2000::/3":         "catch-all",
		"::/96":            "catch-all",
		"::ffff:0:0/96":    "catch-all", // the IPv4 0.0.0.0/0
		"64:ff9b::/96":     "catch-all", // NAT64 of every IPv4 address
		"2002::/16":        "catch-all", // 6to4 of every IPv4 address
		"127.0.0.1":        "names the port",
		"127.0.0.0/8":      "names the port",
		"::1":              "names the port",
		"0.0.0.0":          "names the port",
		"::":               "names the port",
		"::ffff:127.0.0.1": "names the port",
		"localhost":        "localhost name",
		"localhost:8080":   "localhost name",
		"db.localhost":     "localhost name",
		"*.localhost":      "localhost name",
		"LOCALHOST.":       "localhost name",
		"x.invalid":        `".invalid" name`,
		"*.invalid":        `".invalid" name`,
		"abc.onion:443":    `".onion" name`,
	}
	for e, kind := range refused {
		err := CheckReach(e)
		var re *ReachError
		if !errors.As(err, &re) || !strings.Contains(re.Problem, kind) || re.Hint == "" || re.Entry != e {
			t.Errorf("CheckReach(%q) = %#v, want a %s refusal with a hint", e, err, kind)
		}
		if _, err := Compile(Config{TaskAllowlist: map[string][]string{"t": {e}}, Local: testLocal}); err == nil || !strings.Contains(err.Error(), kind) {
			t.Errorf("Compile with %q: %v, want a %s refusal", e, err, kind)
		}
	}
	for _, e := range []string{"*", "*:443", "example.com", "127.0.0.1:8080", "[::1]:8080", "127.0.0.0/8:8080", "0.0.0.0:9",
		"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "8.0.0.0/7", "93.184.216.0/24", "fc00::/7",
		"2001:db8::/32", "2606:2800::/20", "2002:a00::/24", "localhost.example.com", "notlocalhost", "0xA9FEA9FE" /* malformed: not CheckReach's */} {
		if err := CheckReach(e); err != nil {
			t.Errorf("CheckReach(%q) = %v", e, err)
		}
	}
}

// TestSpecialUseRefused: the gate refuses special-use names (RFC 6761,
// RFC 7686) under every entry kind, "*" and a suffix included, with a
// fixed reason, before any resolution: the policy refuses them as entries,
// and "*" allowed localhost until its resolution failed.
func TestSpecialUseRefused(t *testing.T) {
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{"t": {"*", "*.example", "*.test:8080"}}, Local: testLocal})
	for host, why := range map[string]string{
		"localhost":         "a localhost name resolves to loopback",
		"LOCALHOST.":        "a localhost name resolves to loopback",
		"db.localhost":      "a localhost name resolves to loopback",
		"invalid":           `an ".invalid" name never resolves`,
		"x.invalid":         `an ".invalid" name never resolves`,
		"abcdefghij.onion":  `an ".onion" name is Tor's`,
		"localhost.example": "",
		"onion.example":     "",
	} {
		for range 2 { // the second from the reason cache
			d, tg := g.CheckHost("t", host, 443)
			want := fmt.Sprintf(`task "t": host "%s:443" denied, whatever the allowlist: %s`, tg.Name, why)
			switch {
			case why == "" && !d.Allowed():
				t.Errorf("%s: %s", host, d.Reason)
			case why != "" && (d.Allowed() || !strings.HasPrefix(d.Reason, want)):
				t.Errorf("%s: %v %q, want %q", host, d.Verdict, d.Reason, want)
			}
		}
	}
	if d, _ := g.CheckResolved("t", Target{Name: "localhost", Port: 80}, []netip.Addr{netip.MustParseAddr("93.184.216.34")}); d.Allowed() {
		t.Errorf("CheckResolved allowed localhost: %s", d.Reason)
	}
}

// switchLocal is a LocalAddrs whose set a test changes.
type switchLocal struct{ on atomic.Bool }

func (s *switchLocal) Contains(a netip.Addr) bool {
	return s.on.Load() && a == netip.MustParseAddr("10.0.0.5")
}

// TestHostOwnChanges: an address that becomes the host's own is refused
// from the next decision on, and the reason cache never answers with the
// reason of the path taken before.
func TestHostOwnChanges(t *testing.T) {
	local := &switchLocal{}
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{"t": {"10.0.0.0/8"}}, Local: local})
	for range 4 { // enough for the cache to keep the reason
		d, _ := g.CheckHost("t", "10.0.0.5", 22)
		wantDecision(t, "not yet the host's", d, decision.Allow, `task "t": host "10.0.0.5:22" allowed by allowlist entry "10.0.0.0/8"`, "10.0.0.0/8")
	}
	local.on.Store(true)
	for range 4 {
		d, _ := g.CheckHost("t", "10.0.0.5", 22)
		wantDecision(t, "now the host's", d, decision.Deny, `task "t": host "10.0.0.5:22" denied: address 10.0.0.5 is this host's own (an address of this host's interfaces): only an IP or CIDR entry naming the port reaches it, not entry "10.0.0.0/8"`, "10.0.0.0/8")
	}
}

// TestHostAddrs: the default set holds every address of this host's
// interfaces and loopback's, and nothing else that a test uses.
func TestHostAddrs(t *testing.T) {
	s := readHostAddrs()
	if s.err != nil {
		t.Fatal(s.err)
	}
	if len(s.m) == 0 || !HostAddrs().Contains(netip.MustParseAddr("127.0.0.1")) {
		t.Fatalf("host addresses %v: loopback missing", s.m)
	}
	for a := range s.m {
		if !HostAddrs().Contains(a) {
			t.Errorf("%s is the host's but not in HostAddrs", a)
		}
	}
	x := netip.MustParseAddr("93.184.216.34")
	if _, own := s.m[x]; HostAddrs().Contains(x) != own {
		t.Errorf("HostAddrs().Contains(%s) = %v, the host says %v", x, !own, own)
	}
}
