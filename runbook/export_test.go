package runbook

import (
	"context"
	"net"
	"os"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// Test-only hooks, for the runbook_test package: each opens one hole or
// does one benign thing that a check must then see.

// Session is the session interface, for fakes.
type Session = session

// Prober is the probe interface, for fakes.
type Prober = prober

// SetAfterStep makes f run after each step, before the escape checks.
func SetAfterStep(o *Options, f func(step, initPid int)) { hooks(o).afterStep = f }

// SetReprobe changes the request of the probes re-run after each step.
func SetReprobe(o *Options, f func(step int, req sandbox.ProbeRequest) sandbox.ProbeRequest) {
	hooks(o).reprobe = f
}

// SetStartProbe changes the request of the start-up probes.
func SetStartProbe(o *Options, f func(req sandbox.ProbeRequest) sandbox.ProbeRequest) {
	hooks(o).startProbe = f
}

// SetConfig changes the sandbox's configuration before it starts.
func SetConfig(o *Options, f func(cfg *sandbox.Config, canaryDir string)) {
	hooks(o).config = func(cfg *sandbox.Config, c *Canary) { f(cfg, c.Dir()) }
}

// SetStart replaces sandbox.StartSession.
func SetStart(o *Options, f func(ctx context.Context, cfg sandbox.Config) (Session, error)) {
	hooks(o).start = f
}

// SetCanaryMode makes the canary directory with mode instead of 0700.
func SetCanaryMode(o *Options, mode os.FileMode) { hooks(o).canaryMode = mode }

// CanProbe reports whether real sessions report probe results between
// steps (sandbox.Session has a Probe method).
func CanProbe() bool { return canProbe() }

// NewCanaryIn makes a canary under parent with the given mode.
func NewCanaryIn(parent string, mode os.FileMode) (*Canary, error) { return newCanary(parent, mode) }

// CanaryAddr is the canary listener's address.
func CanaryAddr(c *Canary) net.Addr { return c.lis.Addr() }

func hooks(o *Options) *testHooks {
	if o.test == nil {
		o.test = &testHooks{}
	}
	return o.test
}
