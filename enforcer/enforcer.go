package enforcer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/image"
	"github.com/airlock-sandbox/airlock/internal/canary"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// Enforcer runs commands under one policy, writing to one audit log. It is
// safe for concurrent use; each Run gets its own sandbox and proxy, and
// each Session its own.
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
	// Hide are more host paths every sandbox must not see even where they
	// sit in a bound tree (the policy and the audit log always are); a
	// workspace that holds one is refused, since it is copied in whole.
	// The command line gives the approval store and the holders' runtime
	// directory.
	Hide []string
	// OnEvent, when not nil, is called with every event this Enforcer
	// writes to the audit stream, and with the alerts the log's monitor
	// hook writes after them, once each is durable: the live view.
	OnEvent func(audit.Event)
	// Approver, when not nil, is asked to answer every escalated command
	// that comes without an approval; the command runs once if it allows.
	// Nil means the policy's decider (approvals.decider), if it names one.
	Approver approval.Approver
	// Approvals, when not nil, keeps approval requests, so that an
	// operator can answer them (`airlock approve`) and a later request
	// can redeem the approval (Request.Approval, StepRequest.Approval).
	Approvals ApprovalStore
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
	// The policy's approvals section: its decider answers when the
	// caller brought no Approver.
	if ac := pol.ApprovalConfig(); opts.Approver == nil && ac.Decider != nil {
		opts.Approver = &approval.Decider{Argv: ac.Decider, Timeout: ac.DeciderTimeout}
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
	// Env is added to the child's minimal environment (sandbox.BaseEnv:
	// PATH, HOME, the caches, LANG; and the proxy variables), each entry
	// replacing the variable of its name; the caller's own environment
	// is never passed in, so host secrets in it stay outside. An entry
	// that sets a variable airlock sets for containment is refused
	// (ErrEnv).
	Env []string
	// Cwd is the working directory inside: absolute, or relative to
	// /workspace; "" means /workspace.
	Cwd string
	// Timeout, when positive, lowers the tool's wall-clock cap for this
	// run; it never raises it.
	Timeout time.Duration
	// Workspace is a host directory copied into /workspace; Findings a
	// host directory that receives /findings after the run.
	Workspace, Findings string
	// Image, when set, is a pinned image "PATH@sha256:DIGEST" (an OCI
	// layout or a docker-archive tarball) whose verified root file system
	// replaces the host's system directories; ImageCache is where it is
	// unpacked ("" for the default cache).
	Image, ImageCache string
	// Approval is the id of an approval to redeem when the command gate
	// escalates the command (see Options.Approvals).
	Approval string
	// Stdin, Stdout and Stderr are the child's streams. An escalated
	// command's stdin is read whole first (at most MaxApprovalStdin
	// bytes), as its approval is bound to it.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Notices receives airlock's own lines while the command runs (one
	// per egress refusal); nil means Stderr.
	Notices io.Writer
	// RunID names the run; "" means a fresh random id.
	RunID string
}

// Policy returns the policy the Enforcer decides under.
func (e *Enforcer) Policy() *policy.Loaded { return e.pol }

// Log returns the audit log the Enforcer records to.
func (e *Enforcer) Log() *audit.Log { return e.log }

// Record appends ev to the audit log durably and passes it, and what the
// log's hook added after it (the monitor's alerts), to Options.OnEvent;
// it returns ev as written, or an error that names the record the log
// refused. It is for an embedder that writes records of its own beside
// the Enforcer's: a plan's launch (runbook).
func (e *Enforcer) Record(ev audit.Event) (audit.Event, error) {
	return e.record(ev, nil)
}

// record is Record, passing what the append wrote to alarm too when it
// is not nil (a session's, alertstop.go).
func (e *Enforcer) record(ev audit.Event, alarm func([]audit.Event)) (audit.Event, error) {
	w, all, err := e.log.AppendAll(ev)
	if err != nil {
		return w, audit.NotWritten(ev, err)
	}
	if alarm != nil {
		alarm(all)
	}
	if e.opts.OnEvent != nil {
		for _, x := range all {
			e.opts.OnEvent(x)
		}
	}
	return w, nil
}

// Decide is the command gate's decision on req, without running anything.
func (e *Enforcer) Decide(req Request) decision.Decision {
	return e.cmd.Decide(req.Tool, req.Command, req.Args, StepDir(req.Cwd))
}

// Run decides req at the command gate, records the decision, and runs an
// allowed command in a sandbox whose only way out is the egress proxy. An
// escalated command runs once when an approval is redeemed or the
// Approver allows it. The returned error is set when airlock itself
// could not run the command (Result.ExitCode is then ExitSetup, or
// ExitNotFound; Result.AuditError is set too when the cause was a record
// the audit log refused), and when a record of a run whose command ran
// could not be written (Result.ExitCode is then ExitAudit,
// Result.AuditError names the record, and the error wraps ErrAudit);
// refusals and kills are results.
//
// The run is claimed on the audit log while it lives (a run whose airlock
// dies is recorded as abandoned by the next writer), and ended with a
// signed checkpoint and the proofs of its records (Result.Audit) when the
// log has a signer (docs/audit.md).
func (e *Enforcer) Run(ctx context.Context, req Request) (Result, error) {
	if req.RunID == "" {
		req.RunID = NewRunID()
	}
	if req.Task == "" {
		req.Task = req.Tool
	}
	if err := e.checkEnv(req.Task, req.Env); err != nil {
		return envRefused(req.RunID, "", 1, err), err
	}
	claim, err := e.log.BeginRun(req.RunID)
	if err != nil {
		err = fmt.Errorf("enforcer: %w", err)
		return SetupResult(req.RunID, "", 1, err), err
	}
	res, err := e.run(ctx, req)
	return sealRun(claim, res, err)
}

// run is Run once the run is claimed: its command carried from its
// decision to its result in a sandbox of its own.
func (e *Enforcer) run(ctx context.Context, req Request) (Result, error) {
	st := StepRequest{Tool: req.Tool, Command: req.Command, Args: req.Args, Env: req.Env, Cwd: req.Cwd, Timeout: req.Timeout,
		Approval: req.Approval, Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, Notices: req.Notices}
	a := e.newAttempt(e.newScribe(nil), &fresh{req: req}, st, audit.Context{RunID: req.RunID, Task: req.Task})
	a.decide(req.RunID, "", 1)
	info := e.pol.Info()
	a.res.Policy, a.res.Receipt["command"] = &info, e.commandReceipt()
	return a.do(ctx)
}

// prepareImage verifies a pinned image and returns its unpacked root file
// system and digest; with no image, it returns "", "".
func prepareImage(ctx context.Context, ref, cache string) (rootfs, digest string, err error) {
	if ref == "" {
		return "", "", nil
	}
	r, err := image.ParseRef(ref)
	if err != nil {
		return "", "", err
	}
	p, err := image.Prepare(ctx, r, cache, image.Options{})
	if err != nil {
		return "", "", err
	}
	return p.Rootfs, r.Digest.String(), nil
}

// Resolve finds the executable for an allowed command: a path that one of
// Options.Binds provides inside the sandbox, or a file found through the
// policy's command search path, in the image's root rootfs when there is
// one ("" for the host's).
func (e *Enforcer) Resolve(rootfs, command string) (string, error) {
	if _, ok := e.bindAt(command); ok {
		return command, nil
	}
	return cmdgate.Resolve(rootfs, command, e.pol.SearchPath())
}

// bindAt returns the one of Options.Binds that provides path inside the
// sandbox.
func (e *Enforcer) bindAt(path string) (sandbox.Bind, bool) {
	for _, b := range e.opts.Binds {
		if b.Inside == path {
			return b, true
		}
	}
	return sandbox.Bind{}, false
}

// fresh is the way of a run: a sandbox of its own, started for the
// command with its way out and its start-up probes' canary, and torn
// down with it.
type fresh struct {
	req    Request
	digest string // the verified image's
	cn     *canary.Canary
	eg     *wayOut
	sb     *sandbox.Sandbox // started and not waited for, or nil
}

// prepare checks the run's workspace and verifies its image.
func (f *fresh) prepare(ctx context.Context, a *attempt) error {
	ws, err := a.e.checkWorkspace(f.req.Workspace)
	if err != nil {
		return err
	}
	if a.rootfs, f.digest, err = prepareImage(ctx, f.req.Image, f.req.ImageCache); err != nil {
		return fmt.Errorf("image integrity: %w", err)
	}
	a.bound.Task, a.bound.Workspace, a.bound.Image = f.req.Task, ws, f.req.Image
	return nil
}

// execute starts the sandbox, serves the proxy inside it, releases the
// command once its decision is durable and its launch recorded, and
// waits.
func (f *fresh) execute(ctx context.Context, a *attempt) error {
	e, req := a.e, f.req
	// The start-up probes' canaries: a host file and a host loopback
	// listener that must both be unreachable from inside.
	var err error
	if f.cn, err = canary.New(); err != nil {
		return err
	}
	probes := f.cn.Request()
	cfg := e.sandboxConfig(req.RunID, req.Workspace, req.Findings, a.rootfs, e.pol.FilesystemFor(a.st.Tool), a.caps.Limits(), &probes)
	// Stopped before the outcome is recorded, when the run ends: what it
	// records then (the refusals it held to count them, its connections'
	// ends) is in the result, and a failure to record it is not lost.
	if f.eg, err = e.prepareEgress(req.Task, &cfg, a.caps.Limits().Wall, false); err != nil {
		return err
	}
	cfg.Path, cfg.Tree, cfg.Dir, cfg.Args, cfg.Env = a.cmd.path, a.cmd.tree, a.st.Cwd, a.cmd.argv, a.environ(f.eg)
	cfg.Stdin, cfg.Stdout, cfg.Stderr = a.st.Stdin, a.st.Stdout, a.st.Stderr
	sb, err := sandbox.Start(ctx, cfg)
	f.eg.Bound()
	if err != nil {
		return err
	}
	f.sb = sb
	if err := f.eg.Serve(sb.Listener(), int(a.caps.OpenFiles), a.sc.egressRecorder(a.base)); err != nil {
		return err
	}
	if err := a.decided(); err != nil {
		return err
	}
	// Not synced before the command runs: it decides nothing (the decision
	// above is durable), and the outcome's records sync it.
	if err := a.sc.recordLazy(e.launchedEvent(a.base, f.digest, "every start-up probe passed inside the sandbox; the command may run")); err != nil {
		return err
	}
	if err := e.signingReady(); err != nil {
		return err
	}
	if err := sb.Release(); err != nil {
		return err
	}
	// A context cancelled with a sandbox.Terminated cause (SIGTERM) is
	// the sandbox's to end: the target's signal, then its grace period.
	stop := context.AfterFunc(ctx, func() {
		if sandbox.TerminationOf(ctx) == nil {
			_ = sb.Kill()
		}
	})
	out, waitErr := sb.Wait()
	f.sb = nil
	interrupted := !stop() // the AfterFunc ran: ctx ended the run
	res := &a.res
	*res = withOutcome(*res, out, a.caps)
	if interrupted && res.KilledBy == nil {
		res.Interrupted = true
		res.ExitCode = Interrupted(ctx)
	}
	if errors.Is(waitErr, ErrFindingsLost) {
		// Data the caller asked to keep is not there: a failed run, and
		// a result (airlock did run the command).
		res.ExitCode, res.Error = ExitFindings, strings.TrimPrefix(waitErr.Error(), "sandbox: ")
		waitErr = nil
	}
	if out.InitDied != "" {
		res.EscapeSuspected = out.InitDied
		res.ExitCode = ExitEscape
	}
	f.eg.Close()
	res.Receipt["command"] = e.commandReceipt()
	res.Receipt["egress"] = egressReceipt(req.Task)
	a.outcome(f.cn, 0)
	e.recordTeardown(a.sc, a.base, "every process of the sandbox ended; its cgroup, mounts and namespaces are gone")
	if waitErr != nil {
		a.err = fmt.Errorf("enforcer: %w", waitErr)
	}
	return nil
}

func (f *fresh) settle(*Result) {}

// release kills a sandbox that started and was not waited for, and stops
// the way out and the canary.
func (f *fresh) release() {
	if f.sb != nil {
		_ = f.sb.Kill()
		f.sb = nil
	}
	if f.eg != nil {
		f.eg.Close()
	}
	if f.cn != nil {
		f.cn.Close()
	}
}

// sandboxConfig is the sandbox of a run, a session or a plan's launch:
// its id, files, view, caps and start-up probes (nil: the caller runs
// them), with no command, and every host file no sandbox may see hidden
// from it.
func (e *Enforcer) sandboxConfig(id, workspace, findings, rootfs string, fs policy.Filesystem, caps limits.Caps, probes *sandbox.ProbeRequest) sandbox.Config {
	cfg := sandbox.Config{
		Workspace: workspace,
		Findings:  findings,
		Root:      rootfs,
		ReadWrite: fs.ReadWrite,
		Binds:     e.opts.Binds,
		Caps:      caps,
		Proxy:     true,
		Require:   e.pol.Require,
		Weaker:    e.pol.WeakerModes,
		ID:        id,
		// The runbook's start-up checks, on every launch: nothing runs
		// until the sandbox has shown, from inside, that it holds.
		Probes: probes,
	}
	if rootfs == "" {
		cfg.ReadOnly = fs.ReadOnly
	}
	// The only places besides the command a macOS sandbox executes from.
	cfg.SearchPath = e.pol.SearchPath()
	cfg.HideFiles(e.hidden()...)
	return cfg
}

// launchedEvent is the sandbox_launched record.
func (e *Enforcer) launchedEvent(base audit.Context, digest, reason string) audit.Event {
	launched := base
	launched.Event = audit.EventSandboxLaunched
	launched.Details = map[string]string{"policy": e.pol.Digest}
	maps.Copy(launched.Details, base.Details)
	if digest != "" {
		launched.Details["image"] = digest
	}
	return audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: reason, Context: launched}
}

// outcome records the outcome of a command that ran, after it marks
// the result when the host's canary listener cn was reached more than
// seen times: a sign that something inside reached the host. It returns
// how many times cn was reached.
func (a *attempt) outcome(cn *canary.Canary, seen int64) int64 {
	res := &a.res
	a.base.Path = res.Path
	n := cn.Accepted()
	if n > seen {
		why := fmt.Sprintf("the host's canary listener on %s was reached %d times", cn.Request().CanaryAddr, n-seen)
		if res.EscapeSuspected != "" {
			why = res.EscapeSuspected + "; " + why
		}
		res.EscapeSuspected = why
	}
	if res.EscapeSuspected != "" {
		ev := a.base
		ev.Event = audit.EventEscapeSuspected
		_ = a.sc.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionDeny, Reason: res.EscapeSuspected, Context: ev})
	}
	a.recordOutcome()
	return n
}

func (e *Enforcer) commandReceipt() string {
	return "airlock command gate (policy " + e.pol.Digest + ")"
}

func egressReceipt(task string) string {
	return "airlock egress proxy on the listener the sandbox's init opened (where, and what else holds egress: network), task " + task
}

// newScribe is a scribe whose appends go to t.
func (e *Enforcer) newScribe(t *tally) *scribe {
	sc := &scribe{e: e}
	sc.cur.Store(t)
	return sc
}

// setupStatus is the exit status of a command airlock could not run for
// err: ExitNotFound for one not installed, ExitCannotExec for one that
// cannot be executed (as the shell and podman), else ExitSetup.
func setupStatus(err error) int {
	if st := cmdgate.ResolveStatus(err); st != 0 {
		return st
	}
	if errors.Is(err, sandbox.ErrStepStart) {
		return ExitCannotExec
	}
	return ExitSetup
}

// notRunEvent is the lifecycle record of a run or session that did not
// start because of err: startup_refused (decision deny, a security event
// the monitor alerts on) when a start-up probe failed inside the sandbox,
// else setup_failed (decision info: a command not installed, a workspace
// over its cap, an image that does not verify, an unmet require).
func notRunEvent(base audit.Context, prefix string, err error) audit.Event {
	ev := audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: prefix + err.Error(), Context: base}
	ev.Context.Event = audit.EventSetupFailed
	if errors.Is(err, sandbox.ErrProbe) {
		ev.Decision, ev.Context.Event = audit.DecisionDeny, audit.EventStartupRefused
	}
	return ev
}

// hidden lists the host files the sandbox must not see even where a tree
// it shows holds them, however they were named (sandbox.Config.HideFiles):
// the policy, the audit log's files (audit.Files), those beside it and the
// signing key's directory (Log.PrivatePaths), and Options.Hide.
func (e *Enforcer) hidden() []string {
	h := append(audit.Files(e.log.Path()), e.pol.HostFile())
	h = append(h, e.log.PrivatePaths()...)
	h = append(h, e.pol.CredentialFiles()...)
	return append(h, e.opts.Hide...)
}

// argv is a command and its arguments as one list.
func argv(command string, args []string) []string {
	return append([]string{command}, args...)
}

// notices returns where the command's notices go: Notices, or else its
// stderr, which then goes through one lock with the child's own output
// (the sandbox writes that from a goroutine of its own); a stdout that is
// the same writer stays the same writer.
func (st *StepRequest) notices() io.Writer {
	if st.Notices != nil || st.Stderr == nil {
		return st.Notices
	}
	lw := &lockedWriter{w: st.Stderr}
	if sameWriter(st.Stdout, st.Stderr) {
		st.Stdout = lw
	}
	st.Stderr = lw
	return lw
}

// sameWriter reports whether a and b are one writer.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }() // uncomparable dynamic types
	return a == b
}

// lockedWriter serializes the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// NewRunID returns a fresh random run id.
func NewRunID() string { return newID("run-") }

// newID is prefix and 12 random hex digits.
func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
