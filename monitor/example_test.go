package monitor_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/monitor"
)

// A Recorder writes each decision durably and raises alerts as they
// happen: here the third denied command within the window.
func ExampleRecorder() {
	dir, _ := os.MkdirTemp("", "monitor-example-")
	defer os.RemoveAll(dir)
	rec, err := monitor.Open(filepath.Join(dir, "audit.jsonl"), monitor.DefaultThresholds(),
		func(a audit.Event) { fmt.Println("ALERT:", a.Reason) })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rec.Close()
	for _, cmd := range []string{"git", "curl", "nc"} {
		d := decision.Decision{Gate: decision.GateCommand, Verdict: decision.Deny,
			Reason: fmt.Sprintf("%q is not in the allowlist of tool %q: deny by default", cmd, "run_tests")}
		ev, _, err := rec.Record(audit.FromDecision(d, audit.Context{Tool: "run_tests", Command: cmd}))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ev.Seq, ev.Decision, cmd)
	}
	// Output:
	// 2 deny git
	// 3 deny curl
	// ALERT: 3 denied commands within 60s: the agent is probing its allowlist
	// 4 deny nc
}
