package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

func TestZeroGateDenies(t *testing.T) {
	tg := Target{Name: "example.com", Port: 443}
	for name, g := range map[string]*Gate{"nil": nil, "zero": {}} {
		d := g.Check("t", tg)
		wantDecision(t, name, d, decision.Deny, "egress gate is not compiled: deny by default", "")
		d, dial := g.CheckResolved("t", tg, addrs("93.184.216.34"))
		wantDecision(t, name+" resolved", d, decision.Deny, "egress gate is not compiled: deny by default", "")
		if dial != nil {
			t.Errorf("%s: dial %v", name, dial)
		}
	}
	var d decision.Decision
	if d.Allowed() {
		t.Error("zero decision allows")
	}
}

func TestEmptyConfig(t *testing.T) {
	g := mustCompile(t, Config{})
	d, _ := g.CheckHost("t", "example.com", 443)
	wantDecision(t, "empty config", d, decision.Deny, `task "t": host "example.com:443" denied by default: the task has no egress allowlist`, "")
	d, _ = g.CheckHost("t", "0xa9fea9fe", 80)
	wantBlocked(t, "empty config floor", d)
}

// TestConcurrentUse runs decisions from many goroutines (meaningful under
// -race, as CI runs it).
func TestConcurrentUse(t *testing.T) {
	g := mustCompile(t, openConfig())
	done := make(chan bool)
	for i := range 8 {
		go func() {
			ok := true
			for j := range 500 {
				h := metadataSpellings[(i*500+j)%len(metadataSpellings)]
				d, _ := g.CheckHost("open", h, 80)
				ok = ok && !d.Allowed()
				d, _ = g.CheckHost("wildcard", "example.com", 443)
				ok = ok && d.Allowed()
				rd, _ := g.CheckResolved("wildcard", Target{Name: "example.com", Port: 443}, addrs("93.184.216.34", "10.0.0.1"))
				ok = ok && rd.Allowed()
			}
			done <- ok
		}()
	}
	for range 8 {
		if !<-done {
			t.Error("a concurrent decision went wrong")
		}
	}
}

func TestEmptyTarget(t *testing.T) {
	g := mustCompile(t, openConfig())
	wantDecision(t, "empty", g.Check("open", Target{Port: 80}), decision.Deny, `task "open": no destination host: deny`, "")
}

func TestAllowlistMatching(t *testing.T) {
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{
		"t": {
			"api.example.com",
			"*.example.com:443",
			"*.deep.example.com",
			"ports.example.org:8443",
			"ports.example.org:443",
			"Bücher.example",
			"93.184.216.0/24:443",
			"93.184.216.34",
			"[2606:2800:220:1::/64]:443",
			"2606:2800:220:1::1",
			"*:8080",
		},
		"empty": {},
	}})
	cases := []struct {
		host string
		port uint16
		rule string // "" for a denial by default
	}{
		{"api.example.com", 80, "api.example.com"},
		{"api.example.com", 0, "api.example.com"}, // no port: port-less entries only
		{"API.EXAMPLE.COM.", 22, "api.example.com"},
		{"www.example.com", 443, "*.example.com:443"},
		{"a.b.c.example.com", 443, "*.example.com:443"},
		{"www.example.com", 80, ""}, // port not allowed
		{"example.com", 443, ""},    // apex is not a subdomain
		{"notexample.com", 443, ""}, // suffix on a label boundary only
		{"x.deep.example.com", 80, "*.deep.example.com"},
		{"x.deep.example.com", 443, "*.deep.example.com"}, // longest suffix first
		{"deep.example.com", 80, ""},
		{"deep.example.com", 443, "*.example.com:443"},
		{"ports.example.org", 443, "ports.example.org:443"},
		{"ports.example.org", 8443, "ports.example.org:8443"},
		{"ports.example.org", 80, ""},
		{"ports.example.org", 0, ""},
		{"xn--bcher-kva.example", 443, "Bücher.example"},
		{"bücher.example", 443, "Bücher.example"},
		{"93.184.216.34", 80, "93.184.216.34"},
		{"93.184.216.34", 443, "93.184.216.34"}, // the longer prefix wins
		{"93.184.216.35", 443, "93.184.216.0/24:443"},
		{"93.184.216.35", 80, ""},
		{"0x5db8d823", 443, "93.184.216.0/24:443"},
		{"2606:2800:220:1::1", 80, "2606:2800:220:1::1"},
		{"2606:2800:220:1::2", 443, "[2606:2800:220:1::/64]:443"},
		{"2606:2800:220:1::2", 80, ""},
		{"anything.example.net", 8080, "*:8080"},
		{"1.1.1.1", 8080, "*:8080"},
		{"anything.example.net", 80, ""},
	}
	for _, c := range cases {
		d, tg := g.CheckHost("t", c.host, c.port)
		if c.rule == "" {
			wantDecision(t, c.host, d, decision.Deny, `task "t": host "`+tg.String()+`" denied by default: not in the task's egress allowlist`, "")
			continue
		}
		wantDecision(t, c.host, d, decision.Allow, `task "t": host "`+tg.String()+`" allowed by allowlist entry "`+c.rule+`"`, c.rule)
	}
	d, _ := g.CheckHost("empty", "example.com", 443)
	wantDecision(t, "empty allowlist", d, decision.Deny, `task "empty": host "example.com:443" denied by default: not in the task's egress allowlist`, "")
}

// TestHandBuiltTargets: a Target not made by ParseTarget is normalised
// before it is checked, so it cannot dodge the floor.
func TestHandBuiltTargets(t *testing.T) {
	g := mustCompile(t, openConfig())
	for _, tg := range []Target{
		{Name: "METADATA.google.internal."},
		{Name: "169.254.169.254"},
		{Name: "0xa9fea9fe"},
		{Name: "metadata.google.internal."},
		{Addr: netip.MustParseAddr("::ffff:169.254.169.254")},
		{Addr: netip.MustParseAddr("2002:a9fe:a9fe::1")},
	} {
		tg.Port = 80
		wantBlocked(t, tg.Name+tg.Addr.String(), g.Check("open", tg))
	}
	for _, tg := range []Target{
		{Name: "bad name", Port: 80},
		{Name: "a..b", Port: 80},
		{Addr: netip.MustParseAddr("fe80::1").WithZone("eth0"), Port: 80},
		{Addr: netip.MustParseAddr("2001:db8::1").WithZone("eth0"), Port: 80},
	} {
		d := g.Check("open", tg)
		if d.Allowed() || !strings.Contains(d.Reason, " is malformed (") {
			t.Errorf("%+v: %v, want malformed", tg, d)
		}
	}
	d := g.Check("wildcard", Target{Name: "Example.COM", Port: 443})
	wantDecision(t, "hand-built upper case", d, decision.Allow, `task "wildcard": host "example.com:443" allowed by allowlist entry "*"`, "*")
}

func TestValidateEntry(t *testing.T) {
	good := []string{
		"example.com", "EXAMPLE.com.", "*.example.com", "*.com", "*", "*:443", "example.com:443",
		"bücher.de", "93.184.216.34", "93.184.216.34:443", "10.0.0.0/8", "10.0.0.0/8:22",
		"2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:443", "2001:db8::/32", "[2001:db8::/32]:443",
		"::ffff:10.0.0.0/104", "localhost", "registry-proxy.internal",
	}
	for _, e := range good {
		if err := ValidateEntry(e); err != nil {
			t.Errorf("ValidateEntry(%q): %v", e, err)
		}
	}
	bad := []struct{ entry, err string }{
		{"", `egress: allowlist entry "": empty entry`},
		{"*.", `egress: allowlist entry "*.": empty host`},
		{"**.example.com", `egress: allowlist entry "**.example.com": '*' may only be the whole entry or its first label`},
		{"*.*.example.com", `egress: allowlist entry "*.*.example.com": '*' may only be the whole entry or its first label`},
		{"a.*.example.com", `egress: allowlist entry "a.*.example.com": '*' may only be the whole entry or its first label`},
		{"*example.com", `egress: allowlist entry "*example.com": '*' may only be the whole entry or its first label`},
		{"*.10.0.0.1", `egress: allowlist entry "*.10.0.0.1": a wildcard entry takes a host name, not an address`},
		{"exa mple.com", `egress: allowlist entry "exa mple.com": space or control character ' ' in host`},
		{"exa_mple.com", `egress: allowlist entry "exa_mple.com": underscore in host name`},
		{"example.com:0", `egress: allowlist entry "example.com:0": port "0" out of range 1-65535`},
		{"example.com:65536", `egress: allowlist entry "example.com:65536": port "65536" out of range 1-65535`},
		{"example.com:0443", `egress: allowlist entry "example.com:0443": port "0443" has a leading zero`},
		{"example.com:https", `egress: allowlist entry "example.com:https": invalid port "https"`},
		{"example.com:", `egress: allowlist entry "example.com:": invalid port ""`},
		{"010.0.0.1", `egress: allowlist entry "010.0.0.1": not a host name or an IP address in standard form (a.b.c.d or IPv6): "010.0.0.1"`},
		{"0xA9FEA9FE", `egress: allowlist entry "0xA9FEA9FE": not a host name or an IP address in standard form (a.b.c.d or IPv6): "0xA9FEA9FE"`},
		{"10.1", `egress: allowlist entry "10.1": not a host name or an IP address in standard form (a.b.c.d or IPv6): "10.1"`},
		{"10.0.0.1/8", `egress: allowlist entry "10.0.0.1/8": CIDR "10.0.0.1/8" has host bits set (did you mean 10.0.0.0/8?)`},
		{"10.0.0.0/33", `egress: allowlist entry "10.0.0.0/33": invalid CIDR "10.0.0.0/33" (want a.b.c.d/n or ipv6/n)`},
		{"fe80::1%eth0", `egress: allowlist entry "fe80::1%eth0": zone identifiers are refused`},
		{"[fe80::1%eth0]:443", `egress: allowlist entry "[fe80::1%eth0]:443": zone identifiers are refused`},
		{"[2001:db8::1]x", `egress: allowlist entry "[2001:db8::1]x": unexpected text after ']'`},
		{"[2001:db8::1", `egress: allowlist entry "[2001:db8::1": unbalanced brackets`},
		{"2001:db8::zz", `egress: allowlist entry "2001:db8::zz": not a host name or an IP address in standard form (a.b.c.d or IPv6): "2001:db8::zz"`},
		{"http://example.com", `egress: allowlist entry "http://example.com": invalid port "//example.com"`},
	}
	for _, c := range bad {
		err := ValidateEntry(c.entry)
		if err == nil || err.Error() != c.err {
			t.Errorf("ValidateEntry(%q) = %v, want %q", c.entry, err, c.err)
		}
	}
}

func TestValidateBlockedEntry(t *testing.T) {
	for _, e := range []string{"169.254.169.254", "evil.example", "10.0.0.0/8", "fd00::/8", "Ｅvil.example."} {
		if err := ValidateBlockedEntry(e); err != nil {
			t.Errorf("ValidateBlockedEntry(%q): %v", e, err)
		}
	}
	for e, want := range map[string]string{
		"*.evil.example":      `egress: alwaysBlocked entry "*.evil.example": write "evil.example": a blocked name blocks its subdomains too`,
		"evil.example:443":    `egress: alwaysBlocked entry "evil.example:443": alwaysBlocked entries take no port (a destination is blocked on every port)`,
		"*":                   `egress: alwaysBlocked entry "*": '*' cannot be always blocked (deny is already the default)`,
		"0251.0376.0251.0376": `egress: alwaysBlocked entry "0251.0376.0251.0376": not a host name or an IP address in standard form (a.b.c.d or IPv6): "0251.0376.0251.0376"`,
	} {
		if err := ValidateBlockedEntry(e); err == nil || err.Error() != want {
			t.Errorf("ValidateBlockedEntry(%q) = %v, want %q", e, err, want)
		}
	}
}

func TestIsAlwaysBlockedEntry(t *testing.T) {
	yes := []string{
		"169.254.169.254", "169.254.169.254:80", "169.254.0.0/16", "169.254.169.0/24", "169.254.0.0/16:443",
		"fe80::1", "[fe80::1]:443", "fe80::/10", "fe80::/64", "fd00:ec2::254", "[fd00:ec2::254]:80", "fd00:ec2::/48",
		"fd20:ce::254", "100.100.100.200", "192.0.0.192", "168.63.129.16",
		"::ffff:169.254.169.254", "::ffff:169.254.0.0/112", "64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:0/112",
		"2002:a9fe::/32", "2002:a9fe:a9fe::/48", "2002:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:5601:5601",
		"metadata.google.internal", "METADATA.GOOGLE.INTERNAL.", "metadata.google.internal:80",
		"x.metadata.google.internal", "*.metadata.google.internal", "metadata", "metadata.goog",
		"instance-data", "instance-data.us-west-2.compute.internal", "ｍｅｔａｄａｔａ.google.internal",
	}
	for _, e := range yes {
		if !IsAlwaysBlockedEntry(e) {
			t.Errorf("IsAlwaysBlockedEntry(%q) = false", e)
		}
	}
	no := []string{
		"*", "*:443", "0.0.0.0/0", "::/0", "169.0.0.0/8", "2002::/16", "2002:a9fe::/16", "64:ff9b::/96",
		"example.com", "*.google.internal", "google.internal", "metadata.example.com", "10.0.0.0/8",
		"fd00::/8", "2001::/32", "0xA9FEA9FE" /* malformed entry */, "",
	}
	for _, e := range no {
		if IsAlwaysBlockedEntry(e) {
			t.Errorf("IsAlwaysBlockedEntry(%q) = true", e)
		}
	}
}

func TestIsAlwaysBlocked(t *testing.T) {
	for _, s := range []string{"169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254", "fe80::1%eth0", "2002:a9fe:a9fe::1"} {
		if !IsAlwaysBlocked(netip.MustParseAddr(s)) {
			t.Errorf("IsAlwaysBlocked(%s) = false", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "127.0.0.1", "10.0.0.1", "::1", "2606:2800:220:1::1"} {
		if IsAlwaysBlocked(netip.MustParseAddr(s)) {
			t.Errorf("IsAlwaysBlocked(%s) = true", s)
		}
	}
	if IsAlwaysBlocked(netip.Addr{}) {
		t.Error("IsAlwaysBlocked(invalid) = true")
	}
	for _, h := range []string{"metadata.google.internal.", "0xA9FEA9FE", "[fd00:ec2::254]", "a.metadata"} {
		if !IsAlwaysBlockedName(h) {
			t.Errorf("IsAlwaysBlockedName(%q) = false", h)
		}
	}
	for _, h := range []string{"example.com", "metadata.example.com", "bad host"} {
		if IsAlwaysBlockedName(h) {
			t.Errorf("IsAlwaysBlockedName(%q) = true", h)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	_, err := Compile(Config{
		TaskAllowlist: map[string][]string{
			"b_task": {"ok.example", "bad host", "169.254.169.254", "blocked.example"},
			"a_task": {"*.", "fd00:ec2::254"},
			"":       {"x.example"},
		},
		AlwaysBlocked: []string{"blocked.example", "*.x.example", "10.0.0.1:80", "*", "0xA9FEA9FE", "ok-block.example", "192.0.2.0/24"},
	})
	if err == nil {
		t.Fatal("Compile accepted a bad config")
	}
	want := []string{
		`egress: alwaysBlocked entry "*.x.example": write "x.example": a blocked name blocks its subdomains too`,
		`egress: alwaysBlocked entry "10.0.0.1:80": alwaysBlocked entries take no port (a destination is blocked on every port)`,
		`egress: alwaysBlocked entry "*": '*' cannot be always blocked (deny is already the default)`,
		`egress: alwaysBlocked entry "0xA9FEA9FE": not a host name or an IP address in standard form (a.b.c.d or IPv6): "0xA9FEA9FE"`,
		`egress: task "": empty task name`,
		`egress: task "a_task": allowlist entry "*.": empty host`,
		`egress: task "a_task": allowlist entry "fd00:ec2::254": always blocked, so it can never be allowed (remove it)`,
		`egress: task "b_task": allowlist entry "bad host": space or control character ' ' in host`,
		`egress: task "b_task": allowlist entry "169.254.169.254": always blocked, so it can never be allowed (remove it)`,
		`egress: task "b_task": allowlist entry "blocked.example": always blocked, so it can never be allowed (remove it)`,
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("Compile error:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestPolicyCannotOpenFloor: no allowlist entry, however broad, opens a
// floor address; the broad entries compile and still refuse it.
func TestPolicyCannotOpenFloor(t *testing.T) {
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{
		"t": {"*", "100.64.0.0/10", "192.0.0.0/24", "168.63.0.0/16", "fc00::/7", "*.internal", "google.internal"},
	}})
	for _, h := range []string{"169.254.169.254", "100.100.100.200", "192.0.0.192", "168.63.129.16", "fd20:ce::254",
		"2002:a9fe:a9fe::", "64:ff9b::a9fe:a9fe", "metadata.google.internal", "fd00:ec2::254", "instance-data.ec2.internal"} {
		d, _ := g.CheckHost("t", h, 80)
		wantBlocked(t, h, d)
	}
}
