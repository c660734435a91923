package runbook_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
)

const rootlessEnv = "AIRLOCK_RUNBOOK_ROOTLESS"

// TestLaunchRootless re-runs this test binary as uid 65534, where
// TestLaunchRootlessInner launches plans through an unprivileged user
// namespace.
func TestLaunchRootless(t *testing.T) {
	out := testutil.RunTestAsNobody(t, "TestLaunchRootlessInner", rootlessEnv+"=1")
	t.Logf("rootless run:\n%s", out)
}

// TestLaunchRootlessInner is TestLaunchPlan and one escape signal, as an
// unprivileged user.
func TestLaunchRootlessInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	if os.Getenv(rootlessEnv) == "" {
		t.Skip("run by TestLaunchRootless")
	}
	// Without a delegated cgroup, memory falls back to an rlimit that a
	// Go runtime's address space would trip at the test policy's cap.
	rootlessPolicy := strings.Replace(testPolicy, `"memoryMb": 256`, `"memoryMb": 1048576`, 1)
	t.Run("plan", func(t *testing.T) {
		e := newEnv(t)
		e.pol = parsePolicy(t, rootlessPolicy)
		res, err := e.launch(t, context.Background(), plan("T-rootless",
			sh("write", "cat input.txt > copy.txt; echo report > /findings/report.txt"),
			sh("read", "cat /workspace/copy.txt"),
		))
		if err != nil || res.ExitCode != runbook.ExitOK {
			t.Fatalf("result %+v, err %v", res, err)
		}
		if b, err := os.ReadFile(filepath.Join(e.findings, "report.txt")); err != nil || string(b) != "report\n" {
			t.Errorf("findings: %q %v", b, err)
		}
		if len(lifecycle(e.events(t), audit.EventSandboxTornDown)) != 1 {
			t.Error("no sandbox_torn_down")
		}
		t.Logf("receipt: %v", res.Receipt)
	})
	t.Run("escape", func(t *testing.T) {
		e := newEnv(t)
		e.pol = parsePolicy(t, rootlessPolicy)
		res, err := e.launch(t, context.Background(), plan("T-rootless-escape",
			sh("prepare", "echo report > /findings/report.txt; echo kept > /workspace/kept.txt"),
			self("x32", "foreign-abi-child", "x32"),
			sh("never", "echo ran > /findings/never.txt"),
		))
		if err != nil {
			t.Fatalf("Launch: %v", err)
		}
		if res.ExitCode != runbook.ExitEscape || len(res.Signals) == 0 || res.Signals[0].Name != runbook.SignalSeccompKill {
			t.Fatalf("result %+v", res)
		}
		for _, f := range []string{"summary.json", "sandbox/processes.json", "sandbox/workspace/kept.txt", "host-files.json"} {
			if _, err := os.Stat(filepath.Join(res.Evidence, f)); err != nil {
				t.Errorf("evidence lacks %s: %v", f, err)
			}
		}
		if _, err := os.Stat(filepath.Join(e.findings, runbook.UntrustedMarker)); err != nil {
			t.Errorf("findings not marked: %v", err)
		}
		var sum struct {
			Freeze string `json:"freeze"`
		}
		b, _ := os.ReadFile(filepath.Join(res.Evidence, "summary.json"))
		if err := json.Unmarshal(b, &sum); err != nil || sum.Freeze == "" {
			t.Errorf("summary.json: %v %s", err, b)
		}
		t.Logf("frozen by %s", sum.Freeze)
	})
}
