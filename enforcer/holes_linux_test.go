package enforcer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
	"github.com/airlock-sandbox/airlock/sandbox/holes"
)

// TestStartupProbeHoles makes the sandbox's init leave one hole open at a
// time (holes.All) and checks that "airlock run" refuses:
// ExitSetup (125), an error matching sandbox.ErrProbe, one
// startup_refused event (a deny) naming each probe that watches the hole,
// no sandbox_launched, no output from the command, and nothing left on
// the host (no init, cgroup or mount of the run, no canary).
func TestStartupProbeHoles(t *testing.T) {
	testutil.RequireRoot(t)
	for _, h := range holes.All {
		t.Run(h.Name, func(t *testing.T) {
			holes.Open(t, h.Name)
			// The canary's directory goes in canaryParent: seen to change,
			// and to be empty again at the end.
			canaryParent := t.TempDir()
			t.Setenv("XDG_RUNTIME_DIR", canaryParent)
			past := time.Now().Add(-time.Hour)
			if err := os.Chtimes(canaryParent, past, past); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, nil)
			var out bytes.Buffer
			runID := "hole-" + h.Name + "-" + strconv.Itoa(os.Getpid())
			res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: "/.airlock/self",
				Args: []string{"payload", "echo", "ran"}, Stdout: &out, Stderr: &out, RunID: runID})
			if !errors.Is(err, sandbox.ErrProbe) || res.ExitCode != enforcer.ExitSetup || enforcer.ExitSetup != 125 {
				t.Fatalf("exit %d, err %v; want 125 and a start-up probe failure", res.ExitCode, err)
			}
			for _, p := range h.Probes {
				if !strings.Contains(err.Error(), p+": ") {
					t.Errorf("error %q does not name probe %s", err, p)
				}
			}
			if out.Len() != 0 {
				t.Errorf("the command ran: %q", out.String())
			}
			var refused []audit.Event
			for _, ev := range f.events(runID) {
				switch ev.Context.Event {
				case audit.EventSandboxLaunched:
					t.Errorf("sandbox_launched written: %+v", ev)
				case audit.EventStartupRefused:
					refused = append(refused, ev)
				}
			}
			if len(refused) != 1 || refused[0].Decision != audit.DecisionDeny || refused[0].Reason != "airlock could not run the command: "+err.Error() {
				t.Fatalf("startup_refused: %+v", refused)
			}
			f.verify(t)
			testutil.CheckNoSandboxLeft(t, runID)
			if fi, err := os.Stat(canaryParent); err != nil || !fi.ModTime().After(past) {
				t.Errorf("no canary was made in %s (%v)", canaryParent, err)
			}
			if left, _ := os.ReadDir(canaryParent); len(left) != 0 {
				t.Errorf("the canary is left: %v", left)
			}
		})
	}
}
