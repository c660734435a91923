package runbook

import (
	"context"
	"io"
	"os"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/canary"
)

// Options configure a Launch. The Enforcer it is given decides every
// step under its policy (the command gate, the egress of the whole plan
// by the plan's task, the caps and the filesystem view), records every
// decision and lifecycle event in its audit log, durably, before the
// action it allows, and passes each to its OnEvent; its Resolver, Dialer
// and Binds are the sandbox's.
type Options struct {
	// PlanFile is where the plan was read from, for the audit trail and
	// the host-write watch; "" when it came from elsewhere.
	PlanFile string
	// Workspace is a host directory copied (never bound) into
	// /workspace; "" leaves it empty.
	Workspace string
	// Findings is a host directory that receives /findings after the
	// plan, write-only: the sandbox never sees it; "" discards them.
	Findings string
	// Image is "PATH@sha256:DIGEST": a pinned OCI layout or archive,
	// verified and unpacked, used as the sandbox's read-only root. ""
	// shows the host's system directories read-only instead.
	Image string
	// ImageCache is the unpacked-image cache; "" means the default.
	ImageCache string
	// EvidenceDir is where a suspected escape's evidence goes, in a
	// subdirectory named for the run; "" means
	// enforcer.DefaultEvidenceDir.
	EvidenceDir string
	// Stdout and Stderr receive the steps' output; nil discards it.
	Stdout, Stderr io.Writer
	// Sentinels are extra host paths watched for writes while the plan
	// runs (see SignalHostWrite).
	Sentinels []string
	// RunID names the launch; "" means a fresh random id.
	RunID string

	// test holds the test-only hooks (export_test.go); nil in production.
	test *testHooks
}

// testHooks are the test-only ways to make a signal fire or a probe fail
// without an escape: each opens one hole or does one benign thing that
// the check must then see. Nothing outside this package's tests can set
// them.
type testHooks struct {
	// afterStep runs after step i (1-based) ended and before the checks:
	// a test tampers with the audit log, touches a sentinel, or moves a
	// sandbox process out of its cgroup here. pid is the init's.
	afterStep func(i, pid int)
	// reprobe changes the request of the probes re-run after step i,
	// e.g. to name a canary the sandbox can see.
	reprobe func(i int, req enforcer.ProbeRequest) enforcer.ProbeRequest
	// startProbe changes the request of the start-up probes; proxyAddr
	// is the proxy listener's address inside the sandbox ("" when the
	// probes run before the listener exists).
	startProbe func(req enforcer.ProbeRequest, proxyAddr string) enforcer.ProbeRequest
	// config changes the sandbox's configuration before it starts (a
	// test binds a directory over /home, or the canary's directory).
	config func(cfg *enforcer.SandboxConfig, c *canary.Canary)
	// start replaces the start of the sandbox and its session: a fake,
	// or a wrapper of open, the launch's own.
	start func(ctx context.Context, e *enforcer.Enforcer, req enforcer.SandboxRequest,
		open func(context.Context, enforcer.SandboxRequest) (session, error)) (session, error)
	// canaryParent and canaryMode make the canary directory elsewhere
	// than in the system's temporary directory, and with another mode
	// than 0700 (a test binds it into the sandbox).
	canaryParent string
	canaryMode   os.FileMode
}
