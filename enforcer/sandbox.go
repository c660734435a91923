package enforcer

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// SandboxRequest is a sandbox of several steps to start (StartSandbox):
// the sandbox of a Session, of a Pool, and of a plan's launch (runbook),
// configured as every sandbox is (the policy's view, binds, require, the
// files no sandbox sees) with its way out for Task.
type SandboxRequest struct {
	// ID names the sandbox (its cgroup) and its CA.
	ID string
	// Task is the egress task its proxy serves; its budget holds per
	// step, the policy's session budget for the sandbox's life.
	Task string
	// Workspace is a host directory copied into /workspace; Findings a
	// host directory that receives /findings at the end.
	Workspace, Findings string
	// Rootfs is a verified image's root, "" for the host's system
	// directories; Filesystem the view of the host it shows.
	Rootfs     string
	Filesystem policy.Filesystem
	// Caps are the sandbox's, for all its steps together; Life bounds how
	// long it may live (its CA's validity).
	Caps limits.Caps
	Life time.Duration
	// Probes, when set, are the start-up probes the init runs before
	// StartSandbox returns, a failure failing the start (ErrProbe); nil
	// leaves them to the caller (Sandbox.Probe), which then decides.
	Probes *ProbeRequest
	// Hide are more host files this sandbox must not see (a plan's file).
	Hide []string
	// Adjust, when not nil, changes the sandbox's configuration before it
	// starts: tests open holes with it.
	Adjust func(*SandboxConfig)
}

// The sandbox's types, for the callers that start and probe a Sandbox
// (a plan's launch) without the sandbox package.
type (
	// SandboxConfig is a sandbox's configuration (SandboxRequest.Adjust).
	SandboxConfig = sandbox.Config
	// ProbeRequest names the host's canary to the start-up probes.
	ProbeRequest = sandbox.ProbeRequest
	// ProbeResult is one start-up probe's outcome.
	ProbeResult = sandbox.ProbeResult
	// Evidence is what a frozen sandbox's snapshot holds.
	Evidence = evidence.Record
	// Teardown is what a sandbox's end reports.
	Teardown = sandbox.Teardown
)

// The sandbox's errors, matched with errors.Is.
var (
	// ErrProbe: a start-up probe failed inside the sandbox.
	ErrProbe = sandbox.ErrProbe
	// ErrInitDied: the sandbox's init died on its own: its integrity is
	// not assured.
	ErrInitDied = sandbox.ErrInitDied
	// ErrSandboxEnded: the sandbox has ended (closed, or its init gone).
	ErrSandboxEnded = sandbox.ErrSessionEnded
	// ErrFrozen: the sandbox is frozen.
	ErrFrozen = sandbox.ErrFrozen
	// ErrFindingsLost: /findings could not all be copied out.
	ErrFindingsLost = findings.ErrLost
)

// Interrupted is the exit status of a run or step its caller ended:
// 128+N for a context cancelled by signal N with a grace period
// (sandbox.Terminated; 143 for SIGTERM), else ExitInterrupted (Ctrl-C).
func Interrupted(ctx context.Context) int {
	if t := sandbox.TerminationOf(ctx); t != nil {
		return 128 + int(t.Signal)
	}
	return ExitInterrupted
}

// Sandbox is a sandbox of several steps with its way out: a Session runs
// its steps in one, a Pool builds them ahead, and a plan's launch starts
// and probes one itself, then runs its steps in a Session opened on it
// (SessionOn). Its methods are safe for concurrent use as
// sandbox.Session's are.
type Sandbox struct {
	e      *Enforcer
	ss     *sandbox.Session
	eg     *wayOut
	rootfs string          // the image's root, "" for none
	files  int             // its open-files cap, for the proxy's bounds
	life   context.Context // ends when the sandbox is closed
	cancel context.CancelFunc
}

// StartSandbox starts req's sandbox: its configuration, its way out
// prepared (the CA's bundle bound inside), and, with req.Probes, the
// start-up probes passed inside it. ctx bounds the start only: the
// sandbox lives until Close. Its proxy serves once Serve is called.
func (e *Enforcer) StartSandbox(ctx context.Context, req SandboxRequest) (*Sandbox, error) {
	cfg := e.sandboxConfig(req.ID, req.Workspace, req.Findings, req.Rootfs, req.Filesystem, req.Caps, req.Probes)
	cfg.HideFiles(req.Hide...)
	eg, err := e.prepareEgress(req.Task, &cfg, req.Life, true)
	if err != nil {
		return nil, err
	}
	if req.Adjust != nil {
		req.Adjust(&cfg)
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	ss, err := sandbox.StartSession(life, cfg)
	eg.Bound()
	if !stop() || err != nil {
		if ss != nil {
			ss.Close()
		}
		eg.Close()
		cancel()
		return nil, errors.Join(err, ctx.Err())
	}
	return &Sandbox{e: e, ss: ss, eg: eg, rootfs: req.Rootfs, files: int(cfg.Caps.OpenFiles), life: life, cancel: cancel}, nil
}

// Serve starts the sandbox's proxy on the listener its init opened,
// recording through rec.
func (sb *Sandbox) Serve(rec EgressRecorder) error {
	return sb.eg.Serve(sb.ss.Listener(), sb.files, rec)
}

// ProxyAddr is the proxy's address inside the sandbox.
func (sb *Sandbox) ProxyAddr() string { return sb.ss.Listener().Addr().String() }

// Locate is where the command d allowed runs, as a step of a session or
// a plan finds it: a bare name through the policy's search path (in
// rootfs, an image's root, when set), a path as named, and a workspace
// program's path as given, the sandbox's init resolving it in its tree
// as the step starts (docs/policy.md, "Workspace programs").
func (e *Enforcer) Locate(rootfs string, d decision.Decision, command string) (string, error) {
	c, err := e.commandOf(rootfs, d, command, nil, sandbox.WorkspaceDir)
	return c.path, err
}

// Probe runs the start-up probes again inside the sandbox, from its
// init, and returns every probe's outcome.
func (sb *Sandbox) Probe(req ProbeRequest) ([]ProbeResult, error) { return sb.ss.Probe(req) }

// Pid returns the process id of the sandbox's init on the host.
func (sb *Sandbox) Pid() int { return sb.ss.Pid() }

// Freeze stops every process of the sandbox where it stands, and says
// how.
func (sb *Sandbox) Freeze() (string, error) { return sb.ss.Freeze() }

// Evidence snapshots the frozen sandbox into dir.
func (sb *Sandbox) Evidence(dir string) (Evidence, error) { return sb.ss.Evidence(dir) }

// Close ends the sandbox: every process killed, /findings copied out,
// its cgroup removed, then its proxy stopped.
func (sb *Sandbox) Close() (Teardown, error) {
	td, err := sb.ss.Close()
	sb.cancel()
	sb.eg.Close()
	return td, err
}
