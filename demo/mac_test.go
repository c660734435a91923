package demo

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMacScript: the demo's macOS script, which only a Mac runs, names
// only the Mac's payloads, with the arguments they take, and each of its
// judges tells a contained outcome from an escape: a payload that got
// through, an egress allowed, a bomb not killed.
func TestMacScript(t *testing.T) {
	const secret, canary, home = "/var/tmp/airlock-demo-secret-1/credentials", "127.0.0.1:4242", "/Users/someone"
	script := macAttempts(secret, canary, home)
	if len(script) < 10 {
		t.Fatalf("%d attempts", len(script))
	}
	for _, a := range script {
		if a.tool == "run_tests" {
			continue
		}
		if a.command != sandbox.SelfPath || len(a.args) < 2 || a.args[0] != "payload" || !payload.IsMac(a.args[1]) {
			t.Errorf("%s: %s %q is not one of the Mac's payloads", a.name, a.command, a.args)
			continue
		}
		blocked := func(got bool) outcome {
			o := outcome{reports: []payload.Report{{Succeeded: got, Errno: "EPERM", Evidence: "operation not permitted"}}}
			o.res.Decision = decision.Allow
			o.res.ExitCode = 1
			o.res.Path = sandbox.SelfPath
			o.res.Receipt = map[string]string{}
			verdict := audit.DecisionDeny
			if got {
				verdict = audit.DecisionAllow
			}
			o.events = []audit.Event{{Kind: audit.KindEgress, Decision: verdict, Reason: "denied by default; always blocked"}}
			return o
		}
		switch name := a.args[1]; {
		case name == "mac-hold" || name == "mac-membomb":
			cap := map[string]string{"mac-hold": "wall", "mac-membomb": "memory"}[name]
			killed := blocked(false)
			killed.res.KilledBy = &cap
			if !a.judge(killed).Contained {
				t.Errorf("%s: killed by the %s cap, judged not contained", a.name, cap)
			}
			if a.judge(blocked(false)).Contained {
				t.Errorf("%s: not killed by a cap, judged contained", a.name)
			}
		case strings.Contains(a.name, "allowlisted"):
			if !a.judge(blocked(true)).Contained {
				t.Errorf("%s: allowed, judged not contained", a.name)
			}
		default:
			if !a.judge(blocked(false)).Contained {
				t.Errorf("%s: refused, judged not contained", a.name)
			}
			if a.judge(blocked(true)).Contained {
				t.Errorf("%s: got through, judged contained", a.name)
			}
		}
	}
}
