package runbook_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox/holes"
)

// TestStartProbeHolesInInit makes the real sandbox's init leave one hole
// open at a time (holes.All: uid 0, capabilities kept, no
// no_new_privs, no seccomp filter, no Landlock, the host's network
// namespace, the host's homes bound in) and checks that the launch
// aborts: ExitSetup (125), startup_refused naming each probe that watches
// the hole as failed and every other probe as passed, no
// sandbox_launched, the step never run, and nothing left on the host.
func TestStartProbeHolesInInit(t *testing.T) {
	testutil.RequireRoot(t)
	for _, h := range holes.All {
		t.Run(h.Name, func(t *testing.T) {
			holes.Open(t, h.Name)
			e := newEnv(t)
			var tr tracker
			tr.track(&e.opts, nil)
			runbook.SetStart(&e.opts, func(ctx context.Context, _ *enforcer.Enforcer, req enforcer.SandboxRequest,
				open func(context.Context, enforcer.SandboxRequest) (runbook.Session, error)) (runbook.Session, error) {
				ss, err := open(ctx, req)
				if err != nil {
					return nil, err
				}
				tr.mu.Lock()
				tr.pidNS, _ = os.Readlink("/proc/" + itoa(ss.Pid()) + "/ns/pid")
				tr.mu.Unlock()
				return ss, nil
			})
			res, err := e.launch(t, context.Background(), plan("T-hole", sh("never", "echo ran > /findings/ran")))
			if err == nil || res.ExitCode != runbook.ExitSetup || runbook.ExitSetup != 125 || res.Outcome != runbook.OutcomeRefused {
				t.Fatalf("result %+v, err %v", res, err)
			}
			if !strings.HasPrefix(res.Reason, "start-up check failed, nothing was run: start-up probe failed: ") {
				t.Errorf("reason %q", res.Reason)
			}
			for _, p := range h.Probes {
				if !strings.Contains(res.Reason, p+": ") {
					t.Errorf("reason %q does not name probe %s", res.Reason, p)
				}
			}
			if res.Steps[0].Status != runbook.StepNotRun {
				t.Errorf("step status %q", res.Steps[0].Status)
			}
			if _, err := os.Stat(e.findings + "/ran"); err == nil {
				t.Error("the step ran")
			}
			evs := e.events(t)
			if len(lifecycle(evs, audit.EventSandboxLaunched)) != 0 {
				t.Error("sandbox_launched written")
			}
			ref := lifecycle(evs, audit.EventStartupRefused)
			if len(ref) != 1 || ref[0].Reason != res.Reason || ref[0].Decision != audit.DecisionDeny {
				t.Fatalf("startup_refused: %+v", ref)
			}
			checkProbeDetails(t, ref[0].Context.Details, h)
			tr.checkNoResidue(t, e.opts.RunID)
			testutil.CheckNoSandboxLeft(t, e.opts.RunID)
		})
	}
}

// checkProbeDetails wants the event's "probe.NAME" details to show the
// hole's probes failed and every other probe passed.
func checkProbeDetails(t *testing.T, details map[string]string, h holes.Hole) {
	t.Helper()
	n := 0
	for k, v := range details {
		name, ok := strings.CutPrefix(k, "probe.")
		if !ok {
			continue
		}
		n++
		switch {
		case slices.Contains(h.Probes, name):
			if !strings.HasPrefix(v, "failed: ") {
				t.Errorf("probe %s: %q, want failed", name, v)
			}
		case slices.Contains(h.Maybe, name):
		case !strings.HasPrefix(v, "ok: "):
			t.Errorf("probe %s: %q: the hole is not the only one", name, v)
		}
	}
	if n < 10 {
		t.Errorf("the event carries %d probe outcomes, want all 10: %v", n, details)
	}
}
