package enforcer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/image"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// Enforcer runs commands under one policy, writing to one audit log. It is
// safe for concurrent use; each Run gets its own sandbox and proxy.
type Enforcer struct {
	pol    *policy.Loaded
	cmd    *cmdgate.Gate
	egress *egress.Gate
	log    *audit.Log
	opts   Options
}

// Options adjust an Enforcer. The zero value is what the command line uses.
type Options struct {
	// Resolver and Dialer are the egress proxy's; nil means the system's.
	// Tests replace them so that nothing leaves the host.
	Resolver proxy.Resolver
	Dialer   proxy.Dialer
	// Binds are extra host paths bound read-only into every sandbox (the
	// demo and the self-test bind airlock's own binary as their payload).
	Binds []sandbox.Bind
	// OnEvent, when not nil, is called with every event this Enforcer
	// writes to the audit stream, and with the alerts the log's monitor
	// hook writes after them, once each is durable: the live view.
	OnEvent func(audit.Event)
}

// New compiles pol's gates once and returns an Enforcer that records every
// decision in log.
func New(pol *policy.Loaded, log *audit.Log, opts Options) (*Enforcer, error) {
	if pol == nil || log == nil {
		return nil, errors.New("enforcer: a policy and an audit log are required")
	}
	eg, err := egress.Compile(pol.EgressConfig())
	if err != nil {
		return nil, fmt.Errorf("enforcer: %w", err)
	}
	return &Enforcer{pol: pol, cmd: cmdgate.Compile(pol.Policy), egress: eg, log: log, opts: opts}, nil
}

// Request is one command an agent's tool asks to run.
type Request struct {
	// Tool is the agent tool asking; its scope decides the command.
	Tool string
	// Task names the egress allowlist; "" means the tool's name.
	Task string
	// Command and Args are what to run, as the agent asked.
	Command string
	Args    []string
	// Env is added to the child's minimal environment (PATH, HOME, LANG
	// and the proxy variables); the caller's own environment is never
	// passed in, so host secrets in it stay outside.
	Env []string
	// Workspace is a host directory copied into /workspace; Findings a
	// host directory that receives /findings after the run.
	Workspace, Findings string
	// Image, when set, is a pinned image "PATH@sha256:DIGEST" (an OCI
	// layout or a docker-archive tarball) whose verified root file system
	// replaces the host's system directories; ImageCache is where it is
	// unpacked ("" for the default cache).
	Image, ImageCache string
	// Stdin, Stdout and Stderr are the child's streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// RunID names the run; "" means a fresh random id.
	RunID string
}

// Decide is the command gate's decision on req, without running anything.
func (e *Enforcer) Decide(req Request) decision.Decision {
	return e.cmd.Decide(req.Tool, req.Command, req.Args)
}

// Run decides req at the command gate, records the decision, and runs an
// allowed command in a sandbox whose only way out is the egress proxy. The
// returned error is set when airlock itself could not run the command
// (Result.ExitCode is then ExitSetup; Result.AuditError is set too when
// the cause was a record the audit log refused), and when a record of a
// run whose command ran could not be written (Result.ExitCode is then
// ExitAudit, Result.AuditError names the record, and the error wraps
// ErrAudit); refusals and kills are results.
//
// The run is claimed on the audit log while it lives (a run whose airlock
// dies is recorded as abandoned by the next writer), and ended with a
// signed checkpoint and the proofs of its records (Result.Audit) when the
// log has a signer (docs/audit.md).
func (e *Enforcer) Run(ctx context.Context, req Request) (Result, error) {
	if req.RunID == "" {
		req.RunID = NewRunID()
	}
	claim, err := e.log.BeginRun(req.RunID)
	if err != nil {
		return Result{RunID: req.RunID, ExitCode: ExitSetup, Error: err.Error()}, fmt.Errorf("enforcer: %w", err)
	}
	res, err := e.run(ctx, req)
	return sealRun(claim, res, err)
}

// run is Run once the run is claimed.
func (e *Enforcer) run(ctx context.Context, req Request) (Result, error) {
	if req.Task == "" {
		req.Task = req.Tool
	}
	base := audit.Context{RunID: req.RunID, Tool: req.Tool, Task: req.Task, Command: req.Command, Args: req.Args, Env: req.Env}
	d := e.cmd.Decide(req.Tool, req.Command, req.Args)
	res := Result{RunID: req.RunID, Gate: d.Gate, Decision: d.Verdict, Reason: d.Why(), Rule: d.Rule}
	// The decision is recorded first, and is durable before the action
	// it allows: for an allowed command its write and fsync overlap the
	// building of the sandbox, and every later step waits for them
	// (rec.decided) before it records anything or releases the command.
	rec := e.newRecords(audit.FromDecision(d, base))
	if !d.Allowed() {
		if err := rec.decided(); err != nil {
			return rec.setupFailed(res, base, err)
		}
		res.ExitCode = ExitGate
		return res, nil
	}
	rootfs, digest, err := prepareImage(ctx, req)
	if err != nil {
		return rec.setupFailed(res, base, fmt.Errorf("image integrity: %w", err))
	}
	path, err := e.resolve(rootfs, req.Command)
	if err != nil {
		return rec.setupFailed(res, base, fmt.Errorf("the command gate allowed %q but it cannot be run: %w", req.Command, err))
	}
	base.Path = path
	res.Path = path
	return e.runAllowed(ctx, req, res, base, rec, rootfs, digest)
}

// prepareImage verifies a pinned image and returns its unpacked root file
// system and digest; with no image, it returns "", "".
func prepareImage(ctx context.Context, req Request) (rootfs, digest string, err error) {
	if req.Image == "" {
		return "", "", nil
	}
	ref, err := image.ParseRef(req.Image)
	if err != nil {
		return "", "", err
	}
	p, err := image.Prepare(ctx, ref, req.ImageCache, image.Options{})
	if err != nil {
		return "", "", err
	}
	return p.Rootfs, ref.Digest.String(), nil
}

// resolve finds the executable for an allowed command: a path that one of
// Options.Binds provides inside the sandbox, or a file found through the
// policy's command search path, in the image's root when there is one.
func (e *Enforcer) resolve(rootfs, command string) (string, error) {
	for _, b := range e.opts.Binds {
		if b.Inside == command {
			return command, nil
		}
	}
	return cmdgate.Resolve(rootfs, command, e.pol.SearchPath())
}

// runAllowed starts the sandbox, serves the proxy inside it, and waits.
func (e *Enforcer) runAllowed(ctx context.Context, req Request, res Result, base audit.Context, rec *records, rootfs, digest string) (Result, error) {
	caps := e.pol.CapsFor(req.Tool)
	fs := e.pol.FilesystemFor(req.Tool)
	// The start-up probes' canaries: a host file and a host loopback
	// listener that must both be unreachable from inside.
	canary, err := runbook.NewCanary()
	if err != nil {
		return rec.setupFailed(res, base, err)
	}
	defer canary.Close()
	probes := canary.Request()
	cfg := sandbox.Config{
		Path:      res.Path,
		Args:      append([]string{req.Command}, req.Args...),
		Env:       append(sandbox.BaseEnv(e.pol.SearchPath()), req.Env...),
		Workspace: req.Workspace,
		Findings:  req.Findings,
		Root:      rootfs,
		ReadWrite: fs.ReadWrite,
		Binds:     e.opts.Binds,
		Hide:      e.hidden(),
		Caps:      caps.Limits(),
		Proxy:     true,
		Require:   e.pol.Require,
		Stdin:     req.Stdin,
		Stdout:    req.Stdout,
		Stderr:    req.Stderr,
		ID:        req.RunID,
		// The runbook's start-up checks, on every launch: nothing runs
		// until the sandbox has shown, from inside, that it holds.
		Probes: &probes,
	}
	if rootfs == "" {
		cfg.ReadOnly = fs.ReadOnly
	}
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		return rec.setupFailed(res, base, err)
	}
	px, err := proxy.New(proxy.Config{
		Task:     req.Task,
		Gate:     e.egress,
		Resolver: e.opts.Resolver,
		Dialer:   e.opts.Dialer,
		// Every egress decision is durable before the dial it allows: a
		// failed write refuses the connection, and fails the run.
		Record: func(ev proxy.Event) error {
			a := proxy.AuditEvent(ev, egressBase(base))
			record := rec.record
			if ev.Stage == proxy.StageClosed {
				record = rec.recordLazy // nothing waits on a connection's end
			}
			if record(a) != nil {
				return errNotRecorded
			}
			return nil
		},
	})
	if err != nil {
		_ = sb.Kill()
		return rec.setupFailed(res, base, err)
	}
	go func() { _ = px.Serve(sb.Listener()) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = px.Shutdown(sctx)
	}()

	if err := rec.decided(); err != nil {
		_ = sb.Kill()
		return rec.setupFailed(res, base, err)
	}
	launched := base
	launched.Event = audit.EventSandboxLaunched
	launched.Details = map[string]string{"policy": e.pol.Digest}
	if digest != "" {
		launched.Details["image"] = digest
	}
	// Not synced before the command runs: it decides nothing (the decision
	// above is durable), and the outcome's records sync it.
	if err := rec.recordLazy(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo,
		Reason: "every start-up probe passed inside the sandbox; the command may run", Context: launched}); err != nil {
		_ = sb.Kill()
		return rec.setupFailed(res, base, err)
	}
	if err := sb.Release(); err != nil {
		_ = sb.Kill()
		return rec.setupFailed(res, base, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = sb.Kill() })
	out, waitErr := sb.Wait()
	interrupted := !stop() // the AfterFunc ran: ctx ended the run
	res = withOutcome(res, out, caps)
	if interrupted && res.KilledBy == nil {
		res.Interrupted = true
		res.ExitCode = ExitInterrupted
	}
	if n := canary.Accepted(); n > 0 {
		res.EscapeSuspected = fmt.Sprintf("the host's canary listener on %s was reached %d times during the run", probes.CanaryAddr, n)
		ev := base
		ev.Event = audit.EventEscapeSuspected
		_ = rec.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionDeny, Reason: res.EscapeSuspected, Context: ev})
	}
	res.Receipt["command"] = "airlock command gate (policy " + e.pol.Digest + ")"
	res.Receipt["egress"] = "airlock egress proxy inside the sandbox's network namespace, task " + req.Task
	rec.outcome(base, res)
	res, err = rec.finish(res)
	if waitErr != nil {
		err = errors.Join(fmt.Errorf("enforcer: %w", waitErr), err)
	}
	return res, err
}

// record appends ev durably and passes it, and any alert the log's hook
// wrote after it, to OnEvent.
func (e *Enforcer) record(ev audit.Event) error { return e.emit(e.log.AppendAll(ev)) }

// recordLazy is record for an event no action waits on: written now,
// synced by the next record (audit.Log.AppendLazy).
func (e *Enforcer) recordLazy(ev audit.Event) error { return e.emit(e.log.AppendLazy(ev)) }

// emit passes the lines one append wrote to OnEvent.
func (e *Enforcer) emit(_ audit.Event, all []audit.Event, err error) error {
	if err != nil {
		return err
	}
	if e.opts.OnEvent != nil {
		for _, w := range all {
			e.opts.OnEvent(w)
		}
	}
	return nil
}

// hidden lists the host files the sandbox must not see even when they sit
// in a bound tree: the policy, the audit log, the files beside it and the
// signing key's directory.
func (e *Enforcer) hidden() []string {
	var h []string
	if e.pol.Source != policy.EmbeddedName && strings.HasPrefix(e.pol.Source, "/") {
		h = append(h, e.pol.Source)
	}
	if p := e.log.Path(); strings.HasPrefix(p, "/") {
		h = append(h, p)
	}
	return append(h, e.log.PrivatePaths()...)
}

// NewRunID returns a fresh random run id.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}
