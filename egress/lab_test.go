package egress

import (
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// TestLabPhase3Cases runs the six test cases of lab phase 3.3 on the
// seed's egress policy, asserting reasons as well as verdicts.
func TestLabPhase3Cases(t *testing.T) {
	g := mustCompile(t, seedConfig())
	const blocked = " (cloud metadata and link-local destinations are never reachable)"
	cases := []struct {
		task, host string
		verdict    decision.Verdict
		reason     string
		rule       string
	}{
		{"web_search", "search.example-corp.net", decision.Allow,
			`task "web_search": host "search.example-corp.net:443" allowed by allowlist entry "search.example-corp.net"`,
			"search.example-corp.net"},
		{"web_search", "evil.attacker.example", decision.Deny,
			`task "web_search": host "evil.attacker.example:443" denied by default: not in the task's egress allowlist`, ""},
		{"fetch_docs", "search.example-corp.net", decision.Deny,
			`task "fetch_docs": host "search.example-corp.net:443" denied by default: not in the task's egress allowlist`, ""},
		{"install_deps", "registry.npmjs.org", decision.Deny,
			`task "install_deps": host "registry.npmjs.org:443" denied by default: not in the task's egress allowlist`, ""},
		{"web_search", "169.254.169.254", decision.Deny,
			`task "web_search": host "169.254.169.254:443" is always blocked: address 169.254.169.254 matches policy entry "169.254.169.254"` + blocked,
			"169.254.169.254"},
		{"any_task", "metadata.google.internal", decision.Deny,
			`task "any_task": host "metadata.google.internal:443" is always blocked: the name matches built-in entry "metadata.google.internal"` + blocked,
			"metadata.google.internal"},
	}
	for _, c := range cases {
		d, _ := g.CheckHost(c.task, c.host, 443)
		wantDecision(t, c.task+" "+c.host, d, c.verdict, c.reason, c.rule)
	}
}

// TestSeedSemantics pins how the seed's allowlist reads beyond the six
// cases: an entry is an exact host (the seed lists the api. subdomain
// separately), and the seed's other metadata entries are blocked.
func TestSeedSemantics(t *testing.T) {
	g := mustCompile(t, seedConfig())
	d, _ := g.CheckHost("web_search", "api.search.example-corp.net", 443)
	wantDecision(t, "api subdomain", d, decision.Allow,
		`task "web_search": host "api.search.example-corp.net:443" allowed by allowlist entry "api.search.example-corp.net"`,
		"api.search.example-corp.net")
	d, _ = g.CheckHost("web_search", "other.search.example-corp.net", 443)
	wantDecision(t, "unlisted subdomain", d, decision.Deny,
		`task "web_search": host "other.search.example-corp.net:443" denied by default: not in the task's egress allowlist`, "")
	d, _ = g.CheckHost("install_deps", "169.254.170.2", 80)
	wantDecision(t, "ECS metadata", d, decision.Deny,
		`task "install_deps": host "169.254.170.2:80" is always blocked: address 169.254.170.2 matches policy entry "169.254.170.2" (cloud metadata and link-local destinations are never reachable)`,
		"169.254.170.2")
	d, _ = g.CheckHost("install_deps", "169.254.1.1", 80)
	wantDecision(t, "link-local floor", d, decision.Deny,
		`task "install_deps": host "169.254.1.1:80" is always blocked: address 169.254.1.1 matches built-in entry "169.254.0.0/16" (cloud metadata and link-local destinations are never reachable)`,
		"169.254.0.0/16")
	d, _ = g.CheckHost("no_such_task", "example.com", 443)
	wantDecision(t, "unknown task", d, decision.Deny,
		`task "no_such_task": host "example.com:443" denied by default: the task has no egress allowlist`, "")
}
