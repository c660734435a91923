package egress

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// TestCheckResolved covers DNS rebinding and mixed answers: the proxy
// resolves once and hands every address to CheckResolved (a fake answer
// here; nothing is resolved or dialled).
func TestCheckResolved(t *testing.T) {
	g := mustCompile(t, Config{
		TaskAllowlist: map[string][]string{
			"exact":  {"api.example.com"},
			"suffix": {"*.example.com"},
			"any":    {"*"},
			"mixed":  {"*", "10.0.0.0/8:443"},
		},
		AlwaysBlocked: []string{"evil.example", "203.0.113.7"},
	})
	const blocked = " (cloud metadata and link-local destinations are never reachable)"
	cases := []struct {
		task, host string
		answer     []netip.Addr
		verdict    decision.Verdict
		reason     string
		rule       string
		dial       []netip.Addr
	}{
		// Rebinding: an allowlisted name that resolves to metadata.
		{"exact", "api.example.com", addrs("169.254.169.254"), decision.Deny,
			`task "exact": host "api.example.com:443" is always blocked: it resolves to 169.254.169.254, which matches built-in entry "169.254.0.0/16"` + blocked,
			"169.254.0.0/16", nil},
		{"any", "rebind.attacker.example", addrs("::ffff:169.254.169.254"), decision.Deny,
			`task "any": host "rebind.attacker.example:443" is always blocked: it resolves to 169.254.169.254, which matches built-in entry "169.254.0.0/16"` + blocked,
			"169.254.0.0/16", nil},
		{"any", "rebind.attacker.example", addrs("64:ff9b::a9fe:a9fe"), decision.Deny,
			`task "any": host "rebind.attacker.example:443" is always blocked: it resolves to 169.254.169.254, which matches built-in entry "169.254.0.0/16"` + blocked,
			"169.254.0.0/16", nil},
		{"any", "rebind.attacker.example", addrs("fd00:ec2::254"), decision.Deny,
			`task "any": host "rebind.attacker.example:443" is always blocked: it resolves to fd00:ec2::254, which matches built-in entry "fd00:ec2::/32"` + blocked,
			"fd00:ec2::/32", nil},
		{"any", "rebind.attacker.example", []netip.Addr{netip.MustParseAddr("fe80::1").WithZone("eth0")}, decision.Deny,
			`task "any": host "rebind.attacker.example:443" is always blocked: it resolves to fe80::1, which matches built-in entry "fe80::/10"` + blocked,
			"fe80::/10", nil},
		// A mix of public and metadata: the whole name is refused.
		{"any", "mixed.attacker.example", addrs("93.184.216.34", "169.254.169.254", "2606:2800:220:1::1"), decision.Deny,
			`task "any": host "mixed.attacker.example:443" is always blocked: it resolves to 169.254.169.254, which matches built-in entry "169.254.0.0/16"` + blocked,
			"169.254.0.0/16", nil},
		{"exact", "api.example.com", addrs("93.184.216.34", "100.100.100.200"), decision.Deny,
			`task "exact": host "api.example.com:443" is always blocked: it resolves to 100.100.100.200, which matches built-in entry "100.100.100.200"` + blocked,
			"100.100.100.200", nil},
		// The policy's own alwaysBlocked addresses count too.
		{"any", "x.example.net", addrs("203.0.113.7"), decision.Deny,
			`task "any": host "x.example.net:443" is always blocked: it resolves to 203.0.113.7, which matches policy entry "203.0.113.7"` + blocked,
			"203.0.113.7", nil},
		// Loopback and the host's own addresses: no name reaches them.
		{"exact", "api.example.com", addrs("127.0.0.1"), decision.Deny,
			`task "exact": host "api.example.com:443" denied: it resolves to 127.0.0.1, this host's own (loopback): only an IP or CIDR entry naming the port reaches it, not entry "api.example.com"`,
			"api.example.com", nil},
		{"exact", "api.example.com", addrs("192.0.2.2", "93.184.216.34"), decision.Allow,
			`task "exact": host "api.example.com:443" allowed by allowlist entry "api.example.com" (1 of 2 resolved addresses dropped: non-public or this host's own)`,
			"api.example.com", addrs("93.184.216.34")},
		{"suffix", "api.example.com", addrs("127.0.0.1"), decision.Deny,
			`task "suffix": host "api.example.com:443" denied: it resolves to 127.0.0.1, this host's own (loopback): only an IP or CIDR entry naming the port reaches it, not entry "*.example.com"`,
			"*.example.com", nil},
		{"any", "localtest.me", addrs("127.0.0.1", "::1"), decision.Deny,
			`task "any": host "localtest.me:443" denied: it resolves to 127.0.0.1, this host's own (loopback): only an IP or CIDR entry naming the port reaches it, not entry "*"`,
			"*", nil},
		{"any", "internal.example", addrs("10.1.2.3", "fc00::1", "100.64.1.1", "0.0.0.0"), decision.Deny,
			`task "any": host "internal.example:443" denied: it resolves only to non-public addresses (10.1.2.3 is private (RFC 1918)) and wildcard entry "*" reaches public addresses only`,
			"*", nil},
		// Mixed public and private under a wildcard: the private one is dropped.
		{"any", "split.example", addrs("10.0.0.1", "93.184.216.34", "::1", "2606:2800:220:1::1"), decision.Allow,
			`task "any": host "split.example:443" allowed by allowlist entry "*" (2 of 4 resolved addresses dropped: non-public or this host's own)`,
			"*", addrs("93.184.216.34", "2606:2800:220:1::1")},
		{"any", "www.example", addrs("93.184.216.34"), decision.Allow,
			`task "any": host "www.example:443" allowed by allowlist entry "*"`,
			"*", addrs("93.184.216.34")},
		// A CIDR entry of the task covers a private answer reached by "*".
		{"mixed", "db.example", addrs("10.1.2.3", "192.168.1.1"), decision.Allow,
			`task "mixed": host "db.example:443" allowed by allowlist entry "*" (1 of 2 resolved addresses dropped: non-public or this host's own)`,
			"*", addrs("10.1.2.3")},
		// No answer.
		{"any", "nx.example", nil, decision.Deny,
			`task "any": host "nx.example:443" denied: it resolved to no address`, "", nil},
		{"any", "bad.example", []netip.Addr{{}}, decision.Deny,
			`task "any": host "bad.example:443" denied: it resolves only to non-public addresses (invalid IP is unusable) and wildcard entry "*" reaches public addresses only`,
			"*", nil},
		// Static refusals come first: the answer is not looked at.
		{"exact", "other.example.com", addrs("93.184.216.34"), decision.Deny,
			`task "exact": host "other.example.com:443" denied by default: not in the task's egress allowlist`, "", nil},
		{"any", "sub.evil.example", addrs("93.184.216.34"), decision.Deny,
			`task "any": host "sub.evil.example:443" is always blocked: the name matches policy entry "evil.example"` + blocked,
			"evil.example", nil},
		{"any", "metadata.google.internal", addrs("93.184.216.34"), decision.Deny,
			`task "any": host "metadata.google.internal:443" is always blocked: the name matches built-in entry "metadata.google.internal"` + blocked,
			"metadata.google.internal", nil},
	}
	for _, c := range cases {
		tg, err := ParseTarget(c.host, 443)
		if err != nil {
			t.Fatal(err)
		}
		d, dial := g.CheckResolved(c.task, tg, c.answer)
		wantDecision(t, c.task+" "+c.host, d, c.verdict, c.reason, c.rule)
		if !slices.Equal(dial, c.dial) {
			t.Errorf("%s %s: dial %v, want %v", c.task, c.host, dial, c.dial)
		}
	}
}

// TestCheckResolvedRebindingSequence: the same name, answered first with
// a public address and then rebound to metadata, is allowed the first
// time and refused the second; CheckResolved keeps no state and looks
// nothing up, so only the checked answer can be dialled.
func TestCheckResolvedRebindingSequence(t *testing.T) {
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{"t": {"rebind.example"}}})
	tg := Target{Name: "rebind.example", Port: 80}
	d, dial := g.CheckResolved("t", tg, addrs("93.184.216.34"))
	if !d.Allowed() || !slices.Equal(dial, addrs("93.184.216.34")) {
		t.Fatalf("first answer: %v %v", d, dial)
	}
	for _, second := range [][]netip.Addr{addrs("169.254.169.254"), addrs("::ffff:a9fe:a9fe"), addrs("93.184.216.34", "169.254.169.254")} {
		d, dial = g.CheckResolved("t", tg, second)
		wantBlocked(t, "rebound", d)
		if dial != nil {
			t.Errorf("rebound answer %v: dial %v", second, dial)
		}
	}
}

func TestCheckResolvedIPLiteral(t *testing.T) {
	g := mustCompile(t, openConfig())
	tg, _ := ParseTarget("::ffff:93.184.216.34", 443)
	d, dial := g.CheckResolved("wildcard", tg, addrs("169.254.169.254"))
	if !d.Allowed() || !slices.Equal(dial, addrs("93.184.216.34")) {
		t.Errorf("IP literal: %v %v; want allowed, dial the literal only", d, dial)
	}
	tg, _ = ParseTarget("0xA9FEA9FE", 443)
	d, dial = g.CheckResolved("open", tg, addrs("93.184.216.34"))
	wantBlocked(t, "IP literal metadata", d)
	if dial != nil {
		t.Errorf("dial %v", dial)
	}
}

func TestCheckResolvedDoesNotAlias(t *testing.T) {
	g := mustCompile(t, openConfig())
	in := addrs("93.184.216.34")
	_, dial := g.CheckResolved("wildcard", Target{Name: "example.com", Port: 443}, in)
	dial[0] = netip.MustParseAddr("169.254.169.254")
	if in[0] != netip.MustParseAddr("93.184.216.34") {
		t.Error("CheckResolved returned the caller's slice")
	}
}
