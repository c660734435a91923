package monitor_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/monitor"
)

// A Monitor as the audit log's hook raises alerts as decisions are
// written, each durable right after the record that raised it: here the
// third denied command within the window.
func ExampleMonitor() {
	dir, _ := os.MkdirTemp("", "monitor-example-")
	defer os.RemoveAll(dir)
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.WithHook(monitor.New(monitor.DefaultThresholds())))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()
	for _, cmd := range []string{"git", "curl", "nc"} {
		d := decision.Decision{Gate: decision.GateCommand, Verdict: decision.Deny,
			Reason: fmt.Sprintf("%q is not in the allowlist of tool %q: deny by default", cmd, "run_tests")}
		ev, lines, err := log.AppendAll(audit.FromDecision(d, audit.Context{Tool: "run_tests", Command: cmd}))
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, l := range lines {
			if l.Kind == audit.KindBehavioral {
				fmt.Println("ALERT:", l.Reason)
			}
		}
		fmt.Println(ev.Seq, ev.Decision, cmd)
	}
	// Output:
	// 2 deny git
	// 3 deny curl
	// ALERT: 3 denied commands within 60s: the agent is probing its allowlist
	// 4 deny nc
}
