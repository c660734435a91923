package demo_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/demo"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/sandbox"
)

const asDemoEnv = "AIRLOCK_TEST_RUN_DEMO"

// TestMain makes the test binary the sandbox init, the payload inside the
// sandbox, or (for TestDemoRootless) the demo itself.
func TestMain(m *testing.M) {
	sandbox.Init()
	if len(os.Args) > 2 && os.Args[1] == "payload" {
		os.Exit(payload.Run(os.Args[2], os.Args[3:]))
	}
	if os.Getenv(asDemoEnv) != "" {
		rep, err := demo.Run(context.Background(), demo.Options{Offline: true})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(rep)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDemoRootless runs the whole demo as an unprivileged user: every
// attempt must still be contained, by the mechanisms the receipt names
// (rlimits where there is no cgroup delegation).
func TestDemoRootless(t *testing.T) {
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, asDemoEnv+"=1", "HOME=/nonexistent", "XDG_STATE_HOME="))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo as nobody: %v\n%s", err, out)
	}
	var rep demo.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rep.Attempts) < 15 {
		t.Fatalf("only %d attempts", len(rep.Attempts))
	}
	for _, a := range rep.Attempts {
		if !a.Contained {
			t.Errorf("attempt %d %q NOT contained: %s %s %q (%s)", a.Step, a.Attempt, a.Gate, a.Decision, a.Reason, a.Evidence)
		}
	}
}
