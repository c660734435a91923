package egress

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// seedConfig is the egress section of the seed's policy.json (lab phase
// 3.1), written out by hand.
func seedConfig() Config {
	return Config{
		TaskAllowlist: map[string][]string{
			"web_search":   {"search.example-corp.net", "api.search.example-corp.net"},
			"fetch_docs":   {"docs.spec.host"},
			"install_deps": {"registry-proxy.internal"},
		},
		AlwaysBlocked: []string{"169.254.169.254", "169.254.170.2", "metadata.google.internal"},
	}
}

// mustCompile compiles cfg, with testLocal as the host's own addresses
// unless cfg names others, so that no test depends on the host it runs on.
func mustCompile(t testing.TB, cfg Config) *Gate {
	t.Helper()
	if cfg.Local == nil {
		cfg.Local = testLocal
	}
	g, err := Compile(cfg)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return g
}

// wantDecision fails unless d has the verdict, the exact reason and rule.
func wantDecision(t testing.TB, what string, d decision.Decision, v decision.Verdict, reason, rule string) {
	t.Helper()
	if d.Gate != decision.GateEgress {
		t.Errorf("%s: gate = %q, want %q", what, d.Gate, decision.GateEgress)
	}
	if d.Verdict != v || d.Reason != reason || d.Rule != rule {
		t.Errorf("%s:\n got  %v %q rule %q\n want %v %q rule %q", what, d.Verdict, d.Reason, d.Rule, v, reason, rule)
	}
}

// wantBlocked fails unless d is an always-blocked denial.
func wantBlocked(t testing.TB, what string, d decision.Decision) {
	t.Helper()
	if d.Verdict != decision.Deny || !strings.Contains(d.Reason, " is always blocked: ") {
		t.Errorf("%s: got %v %q, want an always-blocked denial", what, d.Verdict, d.Reason)
	}
}
