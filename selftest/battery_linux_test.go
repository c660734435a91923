package selftest

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// checkReport fails t on every attempt not contained by its expected
// control (a skip must quote a receipt without a cgroup), a failed
// preflight, or any residue.
func checkReport(t *testing.T, rep *Report) {
	t.Helper()
	for _, p := range rep.Preflight {
		if p.Outcome != Passed {
			t.Errorf("preflight %s: %s: %s", p.Attempt, p.Outcome, p.Evidence)
		}
	}
	for _, a := range rep.Attempts {
		switch {
		case a.Outcome == Contained:
		case a.Outcome == Skipped && strings.Contains(a.Evidence, "no cgroup delegation") && rep.Host.Rootless:
		default:
			t.Errorf("%s (expected %s): %s: %s", a.Attempt, a.Control, a.Outcome, a.Evidence)
		}
	}
	for _, c := range rep.Residue.Checks {
		if !c.Clean {
			t.Errorf("residue: %s: %s", c.Name, c.Detail)
		}
	}
	if len(rep.Residue.Checks) != 6 {
		t.Errorf("the residue check made %d comparisons, want 6", len(rep.Residue.Checks))
	}
	t.Log(rep.Line())
}

// TestBatteryAsRoot runs the whole battery as root and fails on any
// attempt that was not contained by its expected control, and on any
// residue.
func TestBatteryAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)
	if rep.Summary.Skipped != 0 {
		t.Errorf("as root nothing may be skipped, %d were", rep.Summary.Skipped)
	}
	if !rep.OK {
		t.Errorf("the report is not OK: %s", rep.Line())
	}
}

// TestBatteryRootless re-runs the test binary as uid 65534 with no
// capability, which runs the battery there: the rootless subset must be
// contained too, and only the cgroup attempts may be skipped, each with
// the receipt's words.
func TestBatteryRootless(t *testing.T) {
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, batteryEnv+"=1"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the battery as uid 65534: %v\n%s", err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("the battery's report: %v\n%s", err, out)
	}
	if !rep.Host.Rootless || rep.Host.UID != 65534 {
		t.Fatalf("the battery ran as uid %d (rootless %v), want 65534", rep.Host.UID, rep.Host.Rootless)
	}
	checkReport(t, &rep)
	for _, a := range rep.Attempts {
		if a.Outcome == Skipped && a.Family != FamilyResources {
			t.Errorf("%s was skipped rootless: only cgroup attempts may be", a.Attempt)
		}
	}
	if rep.Summary.Contained < 100 {
		t.Errorf("only %d attempts were contained rootless", rep.Summary.Contained)
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Fatal(err)
	}
}
