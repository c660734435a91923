package enforcer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// SessionRequest opens a session: one sandbox in which an agent's
// commands run one after another, sharing /workspace and /tmp.
type SessionRequest struct {
	// ID names the session in the audit stream (its runId) and on the
	// host; "" means a fresh random id ("ses-" and 12 hex digits). It is
	// 1 to 48 letters, digits, '.', '_' or '-', and not RunScope.
	ID string
	// Task names the egress allowlist that the proxy serves for the
	// session's whole life; "" means policy.NoTask, which allows no
	// destination.
	Task string
	// Workspace is a host directory copied into /workspace at the start;
	// Findings a host directory that receives /findings at the end.
	Workspace, Findings string
	// Image and ImageCache are as in Request.
	Image, ImageCache string
	// Details are added to the details of every audit record of the
	// session; `airlock mcp` puts the MCP session's id under "session",
	// which `audit timeline --session` matches (docs/mcp.md).
	Details map[string]string
}

// StepRequest is one command of a session.
type StepRequest struct {
	// Tool is the agent tool asking; its scope decides the command, and
	// its caps bound the step's wall clock and CPU time.
	Tool string
	// Command and Args are what to run, as the agent asked.
	Command string
	Args    []string
	// Env is added to the child's minimal environment, as in Request
	// (ErrEnv).
	Env []string
	// Cwd is the working directory inside: absolute, or relative to
	// /workspace; "" means /workspace.
	Cwd string
	// Timeout, when positive, lowers the tool's wall-clock cap for this
	// step; it never raises it.
	Timeout time.Duration
	// Approval is the id of an approval to redeem when the command gate
	// escalates the command.
	Approval string
	// Stdin, Stdout and Stderr are the child's streams (an escalated
	// command's stdin is read whole first, as in Request); Notices
	// receives airlock's own lines while the step runs (nil means Stderr).
	Stdin                   io.Reader
	Stdout, Stderr, Notices io.Writer
}

// SessionSummary is what a session reports when it ends.
type SessionSummary struct {
	// Session is the session's id; Steps the number of commands asked for.
	Session string `json:"session"`
	Steps   int    `json:"steps"`
	// Ended says why the session ended: closed, wall (its wall clock
	// passed), idle (no command for its idle timeout), or escape (a sign
	// that something inside reached the host, or an alert of the
	// policy's session.onAlert).
	Ended string `json:"ended"`
	// Evidence is the directory of the evidence kept when an alert
	// stopped the session.
	Evidence string `json:"evidence,omitempty"`
	// CPUMs and PeakMemoryBytes are the whole session's.
	CPUMs           int64 `json:"cpuMs"`
	PeakMemoryBytes int64 `json:"peakMemoryBytes"`
	// FindingsSkipped lists /findings entries not copied out, with why.
	FindingsSkipped []string `json:"findingsSkipped"`
	// Receipt names, per control, the mechanism that enforced it.
	Receipt map[string]string `json:"receipt"`
	// Error is what went wrong in the teardown, if anything.
	Error string `json:"error,omitempty"`
	// AuditError is the first record outside the session's commands (its
	// start and teardown) that the audit log refused, or why its
	// checkpoint was not signed; "" when every one was written
	// (docs/audit.md, "Durability and failures").
	AuditError string `json:"auditError,omitempty"`
	// Audit proves the session's records: the checkpoint signed at its end
	// and each record's inclusion proof in it (docs/audit.md, "Proofs");
	// absent when the audit log has no signing key.
	Audit *audit.RunProof `json:"audit,omitempty"`
}

// Why a session ended (SessionSummary.Ended).
const (
	EndedClosed = "closed"
	EndedWall   = "wall"
	EndedIdle   = "idle"
	EndedEscape = "escape"
)

// ErrSessionEnded is matched by the error of Exec and Changes on a
// session that has ended; Done says when and Summary why.
var ErrSessionEnded = errors.New("enforcer: the session has ended")

// KilledBySession is Result.KilledBy for a step ended by its session's
// wall clock.
const KilledBySession = "session-wall"

// Session is one gated sandbox across an agent's commands (OpenSession),
// or across a plan's steps (SessionOn). Exec and ExecDecided run one step
// at a time; every method is safe for concurrent use.
type Session struct {
	e       *Enforcer
	id      string
	task    string
	*built        // its sandbox, its way out served for its whole life
	canaryN int64 // the canary's accepted connections seen so far; under mu
	sc      *scribe
	base    audit.Context
	claim   *audit.RunClaim // the session's claim on the audit log, ended at its end
	ws      string          // the workspace's real path, "" for none: a step's approval is bound to it
	image   string          // the pinned image, "" for none: a step's approval is bound to it too
	caps    policy.EffectiveSession
	receipt map[string]string
	started time.Time

	afterStep func() // called after the next step (a Pool's refill), or nil; under mu

	// hosted: opened on its caller's sandbox (SessionOn), whose start,
	// probes, escape checks and end are the caller's.
	hosted bool
	// stop is called once, by the first alert of session.onAlert
	// (alertstop.go): the session's own stop, or its caller's.
	stop func(alert audit.Event, why string)

	findings atomic.Pointer[string] // the host directory the findings go to
	serving  atomic.Bool            // opened: an alert may stop it from now on
	alerted  atomic.Bool            // an alert has called stop
	stopped  atomic.Pointer[string] // why an alert stopped the session, once one has (alertstop.go)
	evidence atomic.Pointer[string] // where the stop kept its evidence

	mu     sync.Mutex // held by Exec for a whole step, by Changes and by the end of Close
	steps  int
	ending atomic.Pointer[string] // why the session is ending, once it is
	wall   *time.Timer
	idle   *time.Timer

	closeOnce sync.Once
	done      chan struct{}
	summary   SessionSummary
	closeErr  error
}

// OpenSession starts a session for req: its sandbox, built and probed as
// Run's is, with the egress proxy serving req.Task inside it for the
// session's whole life, and the session's caps from the policy's session
// section (memory, tasks and bytes written for all steps together; a wall
// clock and an idle timeout, after which the session is closed). ctx
// bounds the opening only. The session's start and end are recorded in
// the audit stream under its id.
func (e *Enforcer) OpenSession(ctx context.Context, req SessionRequest) (*Session, error) {
	req, err := normalizeSession(req)
	if err != nil {
		return nil, err
	}
	s, err := e.newSession(req)
	if err != nil {
		return nil, err
	}
	rootfs, digest, err := prepareImage(ctx, req.Image, req.ImageCache)
	if err != nil {
		return nil, s.openFailed(fmt.Errorf("image integrity: %w", err))
	}
	// The sandbox lives until Close, not until ctx is done: ctx may stop
	// the opening only.
	if s.built, err = e.buildSession(ctx, SandboxRequest{ID: s.id, Task: s.task, Workspace: req.Workspace, Findings: req.Findings,
		Rootfs: rootfs}); err != nil {
		return nil, s.openFailed(err)
	}
	s.digest = digest
	if err := s.serve(); err != nil {
		return nil, err
	}
	return s, nil
}

// normalizeSession fills in a session request's defaults and checks its
// id.
func normalizeSession(req SessionRequest) (SessionRequest, error) {
	if req.ID == "" {
		req.ID = NewSessionID()
	}
	if req.Task == "" {
		req.Task = policy.NoTask
	}
	if !ValidSessionID(req.ID) {
		return req, fmt.Errorf("enforcer: session id %q: use 1 to 48 letters, digits, '.', '_' or '-' (not %q)", req.ID, RunScope)
	}
	return req, nil
}

// newSession is a session for req with no sandbox yet, claimed on the
// audit log (one whose holder dies is recorded as abandoned by the log's
// next writer), its workspace checked.
func (e *Enforcer) newSession(req SessionRequest) (*Session, error) {
	s := &Session{e: e, id: req.ID, task: req.Task, image: req.Image, caps: e.pol.SessionCaps(),
		started: time.Now(), done: make(chan struct{})}
	s.sc = e.newScribe(nil)
	s.sc.alarm = s.alarmed
	s.stop = func(alert audit.Event, why string) {
		s.stopped.Store(&why) // for its steps, before the stop runs
		go s.stopForAlert(alert, why)
	}
	s.findings.Store(&req.Findings)
	s.base = audit.Context{RunID: s.id, Task: s.task, Details: maps.Clone(req.Details)}
	if err := e.signingReady(); err != nil {
		return nil, fmt.Errorf("enforcer: session: %w", err)
	}
	claim, err := e.log.BeginRun(s.id)
	if err != nil {
		return nil, fmt.Errorf("enforcer: session: %w", err)
	}
	s.claim = claim
	if s.ws, err = e.checkWorkspace(req.Workspace); err != nil {
		return nil, s.openFailed(err)
	}
	return s, nil
}

// serve finishes opening a session whose sandbox is up: its way out
// serving its task inside, its receipt, its start recorded, and its wall
// clock and idle timeout armed.
func (s *Session) serve() error {
	if err := s.sb.Serve(s.sc.egressRecorder(s.base)); err != nil {
		s.built.close()
		return s.openFailed(err)
	}
	s.receipt = s.sb.ss.Receipt()
	s.receipt["command"] = s.e.commandReceipt()
	s.receipt["egress"] = egressReceipt(s.task)
	how := ": every start-up probe passed inside its sandbox"
	if !s.at.IsZero() {
		how = " on a sandbox built ahead at " + s.at.UTC().Format(time.RFC3339Nano) + ", whose every start-up probe passed inside it"
	}
	open := s.e.launchedEvent(s.base, s.digest, fmt.Sprintf("session %s started%s; it ends after %gs, or %gs without a command",
		s.id, how, s.caps.WallSeconds, s.caps.IdleSeconds))
	// Lazily: nothing runs in the session before a step's decision,
	// whose sync makes this record durable first.
	if err := s.sc.recordLazy(open); err != nil {
		s.built.close()
		return err
	}
	// Armed once both are set: end stops both.
	s.wall = time.AfterFunc(math.MaxInt64, func() { s.end(EndedWall) })
	s.idle = time.AfterFunc(math.MaxInt64, func() { s.end(EndedIdle) })
	s.wall.Reset(s.caps.Wall())
	s.idle.Reset(s.caps.Idle())
	s.serving.Store(true)
	return nil
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// BuiltAhead reports whether the session's sandbox was built ahead, by a
// Pool, rather than when the session opened.
func (s *Session) BuiltAhead() bool { return !s.at.IsZero() }

// Task returns the egress task the session's proxy serves.
func (s *Session) Task() string { return s.task }

// Started returns when the session was opened.
func (s *Session) Started() time.Time { return s.started }

// Pid returns the process id of the session's init on the host.
func (s *Session) Pid() int { return s.sb.ss.Pid() }

// Done is closed once the session has ended and is torn down: closed,
// or ended by its wall clock, its idle timeout or an escape signal.
func (s *Session) Done() <-chan struct{} { return s.done }

// Exec decides one command at the command gate against st.Tool, records
// the decision (synced) under the session's id and the step's number,
// and runs an allowed command in the session's sandbox, with the tool's
// wall-clock and CPU caps; the processes a step leaves are killed before
// the next. Like Run, it returns an error only when airlock could not run
// the command; ErrSessionEnded when the session is gone.
func (s *Session) Exec(ctx context.Context, st StepRequest) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if why := cmp.Or(s.stopped.Load(), s.ending.Load()); why != nil {
		err := fmt.Errorf("%w (%s)", ErrSessionEnded, *why)
		res := SetupResult(s.id, s.id, s.steps+1, err)
		s.stoppedBy(&res)
		return res, err
	}
	if err := s.e.checkEnv(s.task, st.Env); err != nil {
		return envRefused(s.id, s.id, s.steps+1, err), err
	}
	s.idle.Stop()
	defer s.rearm()
	if f := s.afterStep; f != nil {
		s.afterStep = nil
		defer f()
	}
	// The session's end ends the step too, an approver's wait included.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.sb.life, cancel)()
	s.steps++
	base := s.base
	base.Details = map[string]string{}
	maps.Copy(base.Details, s.base.Details)
	base.Details["step"] = strconv.Itoa(s.steps)
	a := s.e.newAttempt(s.sc, s, st, base)
	a.decide(s.id, s.id, s.steps)
	a.res.Receipt = maps.Clone(s.receipt)
	return a.do(ctx)
}

// SessionOn opens a session on sb, a sandbox its caller started
// (StartSandbox), probed and serves (Sandbox.Serve): a plan's launch,
// which decides and records every step before the sandbox starts
// (ExecDecided) and writes its own records through the session (Record).
// The session claims nothing on the audit log, records neither its start
// nor its end, arms no wall clock or idle timer and has no canary of its
// own: those are the caller's, as is sb's end (Sandbox.Close). Its id is
// the runId of the records it watches: the first alert of the policy's
// session.onAlert that one of them raises calls stop, once, with the
// alert and why, where an opened session would stop itself
// (alertstop.go); stop must not wait for the session's step.
func (e *Enforcer) SessionOn(sb *Sandbox, id string, stop func(alert audit.Event, why string)) *Session {
	s := &Session{e: e, id: id, built: &built{sb: sb, rootfs: sb.rootfs}, hosted: true, stop: stop}
	s.sc = e.newScribe(nil)
	s.sc.alarm = s.alarmed
	s.serving.Store(true)
	return s
}

// ExecDecided runs st in the session's sandbox as Exec does, with d, the
// command gate's decision on it, which the caller took and recorded
// before the sandbox started (a plan's preflight approves the plan as a
// whole); d allowed st. Its outcome is recorded under base (the step's
// run, task and details, its number under "step") and told in the
// Result, with Run's exit statuses. The error is airlock's failure to
// run the step, or the sandbox's end under it.
func (s *Session) ExecDecided(ctx context.Context, base audit.Context, st StepRequest, d decision.Decision) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.e.newAttempt(s.sc, s, st, base)
	n, _ := strconv.Atoi(base.Details["step"])
	a.d, a.res = d, newResult(base.RunID, base.RunID, n, d, time.Now())
	a.decided = func() error { return nil } // by the caller, before the sandbox started
	return a.do(ctx)
}

// Record appends ev, a record of the session's caller (a plan's launch),
// as Enforcer.Record does, and passes what the append wrote to the
// session's alert stop, as its own records' are.
func (s *Session) Record(ev audit.Event) (audit.Event, error) {
	return s.e.record(ev, s.alarmed)
}

// prepare checks that the tool's filesystem view is the session's: one
// sandbox has one view (a hosted session's caller chose it).
func (s *Session) prepare(_ context.Context, a *attempt) error {
	a.rootfs = s.rootfs
	if s.hosted {
		return nil
	}
	if fs := s.e.pol.FilesystemFor(a.st.Tool); !reflect.DeepEqual(fs, s.e.pol.FilesystemFor("")) {
		return fmt.Errorf("tool %q has another filesystem view than the session's, and one sandbox has one view; "+
			"give the tool the policy's top-level filesystem, or run it with airlock run", a.st.Tool)
	}
	a.bound.Task, a.bound.Workspace, a.bound.Image = s.task, s.ws, s.image
	return nil
}

// execute runs the step in the session's sandbox, with the tool's caps,
// once its decision is durable (sandbox.Step.Ready); the task's budget
// starts over. A hosted session's caller handles the sandbox's end under
// a step, and checks its own canary.
func (s *Session) execute(ctx context.Context, a *attempt) error {
	s.sb.eg.ResetStep() // a task's budget holds per command
	l := a.caps.Limits()
	caps := &sandbox.StepCaps{Wall: l.Wall, CPU: l.CPU, MemoryBytes: l.MemoryBytes, Tasks: l.Tasks}
	if s.hosted {
		// A plan's sandbox has the largest caps of its steps' tools:
		// each step gets its own tool's output cap under them.
		caps = &sandbox.StepCaps{Wall: l.Wall, CPU: l.CPU, OutputBytes: l.OutputBytes}
	}
	out, err := s.sb.ss.Exec(ctx, sandbox.Step{Path: a.cmd.path, Tree: a.cmd.tree, Args: a.cmd.argv, Env: a.environ(s.sb.eg), Dir: a.st.Cwd,
		Stdin: a.st.Stdin, Stdout: a.st.Stdout, Stderr: a.st.Stderr, Ready: a.decided, Caps: caps})
	if derr := a.decided(); derr != nil {
		return derr
	}
	res := &a.res
	switch {
	case errors.Is(err, sandbox.ErrStepStart): // nothing was executed
		res.ExitCode, res.Error, res.Path = ExitCannotExec, err.Error(), ""
	case errors.Is(err, sandbox.ErrInitDied):
		// Its integrity is not assured: an escape signal, and the end.
		*res = withOutcome(*res, out, a.caps)
		res.EscapeSuspected, res.ExitCode = err.Error(), ExitEscape
	case err != nil && s.ending.Load() == nil && ctx.Err() != nil:
		*res = withOutcome(*res, out, a.caps)
		res.Interrupted, res.ExitCode = true, Interrupted(ctx)
	case err != nil && s.hosted: // the sandbox ended, or was frozen, under the step
		*res = withOutcome(*res, out, a.caps)
		res.Error, a.err = err.Error(), err
	case err != nil:
		return s.stepLost(a, err) // the session ended under the step, or its init died
	default:
		*res = withOutcome(*res, out, a.caps)
	}
	if s.hosted {
		a.base.Path = res.Path
		a.recordOutcome()
		return nil
	}
	s.canaryN = a.outcome(s.canary, s.canaryN)
	if res.EscapeSuspected != "" {
		go s.end(EndedEscape)
	}
	return nil
}

// settle marks the result of a step of a session an alert stopped: the
// stop ends the session itself, its evidence kept.
func (s *Session) settle(res *Result) { s.stoppedBy(res) }

// release: the session's sandbox outlives its steps.
func (s *Session) release() {}

// StepDir is the working directory inside the sandbox of a request's
// Cwd: "" is /workspace, a relative one is taken from /workspace, and
// the result is clean. The command gate decides with it (a NUL byte in
// it is the gate's denial), and the command runs in it.
func StepDir(cwd string) string {
	switch {
	case cwd == "":
		return sandbox.WorkspaceDir
	case !path.IsAbs(cwd):
		cwd = path.Join(sandbox.WorkspaceDir, cwd)
	}
	return path.Clean(cwd)
}

// recordDir puts dir in base's details when it is not the workspace: the
// gate's deny and escalate rules read relative arguments from it.
func recordDir(base *audit.Context, dir string) {
	if dir == sandbox.WorkspaceDir {
		return
	}
	if base.Details == nil {
		base.Details = map[string]string{}
	}
	base.Details["cwd"] = dir
}

// stepLost ends a step whose session ended under it: by its wall clock
// (a kill), by Close (an interruption), by an alert's stop, or by its
// init dying (err, airlock's failure).
func (s *Session) stepLost(a *attempt, err error) error {
	why := s.ending.Load()
	res := &a.res
	switch {
	case s.stopped.Load() != nil:
		s.stoppedBy(res) // killed frozen, by the stop
	case why != nil && *why == EndedWall:
		k := KilledBySession
		res.KilledBy, res.ExitCode, res.Signal = &k, 137, 9
		res.KillReason = fmt.Sprintf("killed by the session's wall clock: the session passed wallSeconds %g; every process was killed and the session torn down", s.caps.WallSeconds)
	case why != nil:
		res.Interrupted, res.ExitCode = true, ExitInterrupted
	default:
		go s.end(EndedClosed)
		return err
	}
	a.recordOutcome()
	return nil
}

// rearm restarts the idle timer after a step.
func (s *Session) rearm() {
	if s.ending.Load() == nil {
		s.idle.Reset(s.caps.Idle())
	}
}

// SetFindings changes the host directory that receives /findings when the
// session ends ("" discards them).
func (s *Session) SetFindings(dir string) error {
	if err := s.sb.ss.SetFindings(dir); err != nil {
		return err
	}
	s.findings.Store(&dir)
	return nil
}

// Close ends the session: it kills every process, copies /findings out,
// tears the sandbox down and stops the proxy, and records the teardown. It
// returns the same summary to every caller; a step in flight is killed.
// When ctx ends first, Close returns its error and the teardown goes on.
func (s *Session) Close(ctx context.Context) (SessionSummary, error) {
	go s.end(EndedClosed)
	select {
	case <-s.done:
	case <-ctx.Done():
		return SessionSummary{Session: s.id}, ctx.Err()
	}
	return s.summary, s.closeErr
}

// Summary returns the session's summary once it has ended (Done).
func (s *Session) Summary() (SessionSummary, error) {
	<-s.done
	return s.summary, s.closeErr
}

// end tears the session down, once, for why.
func (s *Session) end(why string) {
	s.closeOnce.Do(func() {
		s.ending.Store(&why)
		s.wall.Stop()
		s.idle.Stop()
		td, err := s.sb.ss.Close() // kills a step in flight
		s.sb.cancel()              // and ends an approver's wait
		if why == EndedEscape {
			err = errors.Join(err, s.markUntrusted(endedWhy(why, s.caps, s.stopped.Load())))
		}
		s.mu.Lock() // so the step has returned now
		defer s.mu.Unlock()
		s.sb.eg.Close()
		s.canary.Close()
		s.summary = SessionSummary{Session: s.id, Steps: s.steps, Ended: why, CPUMs: td.CPU.Milliseconds(),
			PeakMemoryBytes: td.PeakMemoryBytes, FindingsSkipped: append([]string{}, td.FindingsSkipped...), Receipt: td.Receipt}
		if ev := s.evidence.Load(); ev != nil {
			s.summary.Evidence = *ev
		}
		if err != nil {
			s.summary.Error, s.closeErr = err.Error(), err
		}
		s.e.recordTeardown(s.sc, s.base, fmt.Sprintf("session %s ended (%s) after %d commands; every process of its sandbox ended; its cgroup, mounts and namespaces are gone",
			s.id, endedWhy(why, s.caps, s.stopped.Load()), s.steps))
		// The session's end: a signed checkpoint, and the proofs of its
		// records in it, when the log has a signer.
		proof, perr := s.claim.End()
		s.summary.Audit = proof
		failed := s.sc.sessionFailed()
		if failed == nil && perr != nil {
			failed = fmt.Errorf("the session's checkpoint was not signed: %w", perr)
		}
		if failed != nil {
			s.summary.AuditError = failed.Error()
			s.closeErr = errors.Join(s.closeErr, fmt.Errorf("enforcer: %w: %w", ErrAudit, failed))
		}
		close(s.done)
	})
}

// endedWhy says why a session ended, for the teardown record: stopped
// is why an alert stopped it, if one did.
func endedWhy(why string, c policy.EffectiveSession, stopped *string) string {
	switch {
	case why == EndedWall:
		return fmt.Sprintf("its wall clock passed wallSeconds %g", c.WallSeconds)
	case why == EndedIdle:
		return fmt.Sprintf("no command for idleSeconds %g", c.IdleSeconds)
	case why == EndedEscape && stopped != nil:
		return "stopped by " + *stopped
	case why == EndedEscape:
		return "an escape signal was seen"
	}
	return "closed"
}

// openFailed records that a session could not be opened.
func (s *Session) openFailed(err error) error {
	_ = s.sc.record(notRunEvent(s.base, "airlock could not start the session: ", err))
	_, _ = s.claim.End()
	return fmt.Errorf("enforcer: session: %w", err)
}

// ValidSessionID reports whether id may name a session: a sandbox, a
// cgroup and a holder's socket are named for it.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 48 || id == RunScope {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return id[0] != '.' && id[0] != '-'
}

// NewSessionID returns a fresh random session id.
func NewSessionID() string { return newID("ses-") }
