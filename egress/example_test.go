package egress_test

import (
	"fmt"
	"net/netip"

	"github.com/airlock-sandbox/airlock/egress"
)

func Example() {
	g, err := egress.Compile(egress.Config{
		TaskAllowlist: map[string][]string{
			"web_search": {"search.example-corp.net", "*.cdn.example:443"},
			"browse":     {"*"},
		},
		AlwaysBlocked: []string{"169.254.169.254", "metadata.google.internal"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []struct{ task, host string }{
		{"web_search", "search.example-corp.net:443"},
		{"web_search", "img.cdn.example:443"},
		{"web_search", "evil.attacker.example:443"},
		{"browse", "0xA9FEA9FE:80"},
		{"browse", "[::ffff:a9fe:a9fe]:80"},
		{"browse", "127.0.0.1:8080"},
		{"browse", "fe80::1%25eth0"},
	} {
		d, _ := g.CheckHostPort(c.task, c.host, 443)
		fmt.Println(d)
	}

	// A name the task may reach is resolved once by the proxy; the gate
	// then decides on every address.
	t, _ := egress.SplitHostPort("rebind.attacker.example:443", 443)
	d, dial := g.CheckResolved("browse", t, []netip.Addr{
		netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("169.254.169.254"),
	})
	fmt.Println(d, dial)
	d, dial = g.CheckResolved("browse", t, []netip.Addr{
		netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("93.184.216.34"),
	})
	fmt.Println(d, dial)
	// Output:
	// egress: allow: task "web_search": host "search.example-corp.net:443" allowed by allowlist entry "search.example-corp.net"
	// egress: allow: task "web_search": host "img.cdn.example:443" allowed by allowlist entry "*.cdn.example:443"
	// egress: deny: task "web_search": host "evil.attacker.example:443" denied by default: not in the task's egress allowlist
	// egress: deny: task "browse": host "169.254.169.254:80" is always blocked: address 169.254.169.254 matches policy entry "169.254.169.254" (cloud metadata and link-local destinations are never reachable)
	// egress: deny: task "browse": host "169.254.169.254:80" is always blocked: address 169.254.169.254 matches policy entry "169.254.169.254" (cloud metadata and link-local destinations are never reachable)
	// egress: deny: task "browse": host "127.0.0.1:8080" denied: address 127.0.0.1 is this host's own (loopback): only an IP or CIDR entry naming the port reaches it, not entry "*"
	// egress: deny: task "browse": host "fe80::1%25eth0" is malformed (zone identifiers are refused): deny
	// egress: deny: task "browse": host "rebind.attacker.example:443" is always blocked: it resolves to 169.254.169.254, which matches policy entry "169.254.169.254" (cloud metadata and link-local destinations are never reachable) []
	// egress: allow: task "browse": host "rebind.attacker.example:443" allowed by allowlist entry "*" (1 of 2 resolved addresses dropped: non-public or this host's own) [93.184.216.34]
}
