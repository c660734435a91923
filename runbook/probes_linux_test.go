package runbook_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestStartProbeHoles opens, from outside the init, each hole that a
// start-up probe must see, and checks that the launch aborts with the
// probe named and nothing run. The holes that can only be opened inside
// the init (uid, caps, no_new_privs, seccomp, landlock, interfaces,
// routes) are opened there by TestStartProbeHolesInInit.
func TestStartProbeHoles(t *testing.T) {
	testutil.RequireRoot(t)
	cases := []struct {
		name, want string
		open       func(t *testing.T, e *env)
	}{{
		name: "canary file bound in",
		want: "canary_file: /var/tmp/airlock-canary-",
		open: func(t *testing.T, e *env) {
			// The canary directory outside /tmp (which the sandbox makes
			// itself), readable, and bound read-only into the sandbox.
			runbook.SetCanaryDir(&e.opts, "/var/tmp", 0o755)
			runbook.SetConfig(&e.opts, func(cfg *sandbox.Config, dir, _ string) {
				cfg.ReadOnly = append(cfg.ReadOnly, dir)
			})
		},
	}, {
		name: "home bound in",
		want: "host_dirs: /home is reachable",
		open: func(t *testing.T, e *env) {
			runbook.SetConfig(&e.opts, func(cfg *sandbox.Config, _, _ string) {
				cfg.Binds = append(cfg.Binds, sandbox.Bind{Host: "/usr/share", Inside: "/home/airlock-hole"})
			})
		},
	}, {
		name: "canary listener reachable",
		want: "canary_listener: the host's canary listener 127.0.0.1:",
		open: func(t *testing.T, e *env) {
			// A listener the sandbox can reach (the proxy's, inside its
			// network namespace) stands in for a canary the network
			// namespace failed to hide.
			runbook.SetStartProbe(&e.opts, func(req sandbox.ProbeRequest, proxyAddr string) sandbox.ProbeRequest {
				req.CanaryAddr = proxyAddr
				return req
			})
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			c.open(t, e)
			res, err := e.launch(t, context.Background(), plan("T-hole", sh("never", "echo ran > /findings/ran")))
			if err == nil || res.ExitCode != runbook.ExitSetup || res.Outcome != runbook.OutcomeRefused {
				t.Fatalf("result %+v, err %v", res, err)
			}
			if !strings.Contains(res.Reason, c.want) || !strings.HasPrefix(res.Reason, "start-up check failed, nothing was run: ") {
				t.Errorf("reason %q lacks %q", res.Reason, c.want)
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
			if ref := lifecycle(evs, audit.EventStartupRefused); len(ref) != 1 || !strings.Contains(ref[0].Reason, c.want) {
				t.Errorf("startup_refused: %+v", ref)
			}
		})
	}
}
