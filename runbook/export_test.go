package runbook

import (
	"context"
	"os"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/canary"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// Test-only hooks, for the runbook_test package: each opens one hole or
// does one benign thing that a check must then see.

// Session is the session interface, for fakes.
type Session = session

// SetAfterStep makes f run after each step, before the escape checks.
func SetAfterStep(o *Options, f func(step, initPid int)) { hooks(o).afterStep = f }

// SetReprobe changes the request of the probes re-run after each step.
func SetReprobe(o *Options, f func(step int, req sandbox.ProbeRequest) sandbox.ProbeRequest) {
	hooks(o).reprobe = f
}

// SetStartProbe changes the request of the start-up probes; f learns
// the proxy listener's address inside the sandbox, when it exists.
func SetStartProbe(o *Options, f func(req sandbox.ProbeRequest, proxyAddr string) sandbox.ProbeRequest) {
	hooks(o).startProbe = f
}

// SetConfig changes the sandbox's configuration before it starts; f
// also learns the canary's directory and listener address.
func SetConfig(o *Options, f func(cfg *sandbox.Config, canaryDir, canaryAddr string)) {
	hooks(o).config = func(cfg *sandbox.Config, c *canary.Canary) { f(cfg, c.Dir(), c.Request().CanaryAddr) }
}

// SetStart replaces the start of the sandbox of req and its session: f
// starts them (open), or fakes them.
func SetStart(o *Options, f func(ctx context.Context, e *enforcer.Enforcer, req enforcer.SandboxRequest,
	open func(context.Context, enforcer.SandboxRequest) (Session, error)) (Session, error)) {
	hooks(o).start = f
}

// SetCanaryDir makes the canary directory under parent with mode
// instead of 0700 in the system's temporary directory.
func SetCanaryDir(o *Options, parent string, mode os.FileMode) {
	hooks(o).canaryParent, hooks(o).canaryMode = parent, mode
}

func hooks(o *Options) *testHooks {
	if o.test == nil {
		o.test = &testHooks{}
	}
	return o.test
}
