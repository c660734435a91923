package selftest

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// airlockBinary returns the airlock binary the battery tests run, with
// airlock-init beside it, so that the battery attacks the small init
// (testutil.Binaries).
func airlockBinary(t *testing.T) string { return testutil.Airlock(t) }

// runBattery runs "airlock selftest --json" and returns its report.
func runBattery(t *testing.T, cmd *exec.Cmd) *Report {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var rep Report
	if jerr := json.Unmarshal([]byte(stdout.String()), &rep); jerr != nil {
		t.Fatalf("airlock selftest: %v, and no report (%v)\nstdout: %s\nstderr: %s", err, jerr, stdout.String(), stderr.String())
	}
	if err != nil && rep.OK {
		t.Errorf("airlock selftest failed (%v) with a report that is OK\n%s", err, stderr.String())
	}
	if err == nil && !rep.OK {
		t.Errorf("airlock selftest exited 0 with a report that is not OK: %s", rep.Line())
	}
	return &rep
}

// checkReport fails t on every attempt not contained by its expected
// control (a skip must quote a receipt without a cgroup, rootless), a
// failed preflight, or any residue.
func checkReport(t *testing.T, rep *Report) {
	t.Helper()
	for _, p := range rep.Preflight {
		if p.Outcome != Passed {
			t.Errorf("preflight %s: %s: %s", p.Attempt, p.Outcome, p.Evidence)
		}
	}
	for _, a := range rep.Attempts {
		if a.Outcome != Contained && !(a.Outcome == Skipped && hostLacks(rep, a)) {
			t.Errorf("%s (expected %s): %s: %s", a.Attempt, a.Control, a.Outcome, a.Evidence)
		}
	}
	for _, c := range rep.Residue.Checks {
		if !c.Clean {
			t.Errorf("residue: %s: %s", c.Name, c.Detail)
		}
	}
	if len(rep.Residue.Checks) != 6 || !rep.Residue.Clean {
		t.Errorf("the residue check made %d comparisons (want 6), clean %v", len(rep.Residue.Checks), rep.Residue.Clean)
	}
	if len(rep.Preflight) != 2 {
		t.Errorf("%d preflight checks, want 2", len(rep.Preflight))
	}
	t.Log(rep.Line())
}

// hostLacks reports whether a skip is one the battery may make: the
// receipt shows no cgroup for an unprivileged user, or the host's kernel
// lacks what the attempt reaches for (then there is nothing to reach).
func hostLacks(rep *Report, a Result) bool {
	switch {
	case strings.Contains(a.Evidence, "no cgroup delegation"):
		return rep.Host.Rootless && a.Family == FamilyResources
	case strings.Contains(a.Evidence, "the host's kernel has no"), strings.Contains(a.Evidence, "the host has no IPv6 loopback"):
		return true
	}
	return false
}

// TestBatteryAsRoot runs the whole battery as root and fails on any
// attempt that was not contained by its expected control, and on any
// residue.
func TestBatteryAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	cmd := exec.Command(airlockBinary(t), "selftest", "--json")
	cmd.Dir = t.TempDir()
	rep := runBattery(t, cmd)
	if rep.Host.Rootless || rep.Host.UID != 0 {
		t.Fatalf("the battery ran as uid %d, want root", rep.Host.UID)
	}
	checkReport(t, rep)
	for _, a := range rep.Attempts {
		if strings.Contains(a.Evidence, "no cgroup delegation") {
			t.Errorf("%s: as root nothing may be skipped for want of a cgroup", a.Attempt)
		}
	}
	if rep.Summary.Total < 60 || rep.Summary.Contained+rep.Summary.Skipped != rep.Summary.Total {
		t.Errorf("as root every attempt must run and be contained: %s", rep.Line())
	}
}

// TestBatteryRootless runs the battery as uid 65534 with no capability:
// the rootless subset must be contained too, and only the cgroup
// attempts may be skipped, each quoting the run's receipt.
func TestBatteryRootless(t *testing.T) {
	testutil.RequireRoot(t) // before building airlock: AsNobody would skip only after
	cmd := testutil.AsNobody(t, exec.Command(airlockBinary(t), "selftest", "--json"))
	rep := runBattery(t, cmd)
	if !rep.Host.Rootless || rep.Host.UID != testutil.NobodyID {
		t.Fatalf("the battery ran as uid %d (rootless %v), want %d", rep.Host.UID, rep.Host.Rootless, testutil.NobodyID)
	}
	checkReport(t, rep)
	if rep.Summary.Contained < 100 {
		t.Errorf("only %d attempts were contained rootless: %s", rep.Summary.Contained, rep.Line())
	}
}

// TestRunCommandFamily runs the command gate's attempts in this process:
// decisions only, so it needs no privilege, and the residue check must
// find nothing left.
func TestRunCommandFamily(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seen []string
	rep, err := Run(ctx, Options{Families: []Family{FamilyCommand}, OnResult: func(r Result) { seen = append(seen, r.Attempt) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Preflight) != 0 {
		t.Errorf("decisions need no sandbox, yet %d preflight checks ran", len(rep.Preflight))
	}
	if len(seen) != len(rep.Attempts) {
		t.Errorf("OnResult saw %d results, the report has %d", len(seen), len(rep.Attempts))
	}
	for _, a := range rep.Attempts {
		if a.Family != FamilyCommand || a.Outcome != Contained {
			t.Errorf("%s: %s: %s", a.Attempt, a.Outcome, a.Evidence)
		}
	}
	if !rep.Residue.Clean || !rep.OK {
		t.Errorf("not OK: %s %+v", rep.Line(), rep.Residue)
	}
}
