package runbook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/canary"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/policy"
)

// launch is one Launch in progress.
type launch struct {
	plan *Plan
	opts Options
	enf  *enforcer.Enforcer // the sandbox's configuration and its way out
	res  Result
	base audit.Context

	decisions []decision.Decision // each step's, as the preflight recorded it
	caps      limits.Caps
	fs        policy.Filesystem
	rootfs    string
	image     map[string]string // the image's audit details

	canary     *canary.Canary
	sess       session
	chain      *chainWatch
	procs      *sandboxProcs
	hostFiles  []string
	hostTrees  []watchedTree
	hostBefore hostSnapshot

	launched atomic.Bool           // the sandbox passed its probes: records go through sess
	step     atomic.Int64          // the step running now (1-based), 0 between steps
	auditErr atomic.Pointer[error] // the first event the log refused
	esc      *escape
	tornDown atomic.Bool

	// closeSession ends the sandbox, once: every process killed,
	// /findings copied out, the cgroup removed, the listener closed (the
	// mounts and namespaces go with the init).
	closeSession func() (enforcer.Teardown, error)
}

// Launch runs plan in one sandbox, as the runbook says:
//
//  1. every step is decided at the command gate and the decision
//     recorded; one denied or escalated step refuses the whole plan
//     (ExitDenied, ExitEscalated) before anything starts;
//  2. the image, when given, is verified against its pinned digest and
//     unpacked; every allowed command is resolved;
//  3. one sandbox starts, and the start-up probes run inside it: uid,
//     capabilities, no_new_privs, seccomp, Landlock, only lo and no
//     route, the host's canary file and canary listener unreachable.
//     Any failure: nothing runs, startup_refused is written with the
//     reason (ExitSetup); a failure to set the sandbox up (an image
//     that does not verify, a command not installed, an unmet require)
//     writes setup_failed instead (ExitSetup, ExitNotFound or
//     ExitCannotExec);
//  4. sandbox_launched is written with the test id, the image digest and
//     every probe's outcome; the egress proxy serves the plan's task
//     inside the sandbox's network namespace, with the task's CA,
//     credentials and budgets (enforcer.Egress, as every entry point's);
//  5. the steps run in order in the same workspace; each outcome is
//     recorded; after each step the escape signals are checked (see
//     Signal*), and some during it;
//  6. teardown: every process stopped, /findings copied out write-only
//     to Options.Findings, the cgroup and mounts removed, the workspace
//     copy deleted, sandbox_torn_down written.
//
// A step that fails halts the plan unless it says continueOnFailure
// (ExitStepFailed). A suspected escape halts it at once: the sandbox is
// frozen, evidence is written under Options.EvidenceDir (the workspace
// kept there), escape_suspected is recorded, the findings are marked
// UNTRUSTED, and the launch exits ExitEscape.
//
// A record the audit log refuses (a full disk) is never acted on nor
// silent: a step's decision or the launch record refuses the launch
// (ExitSetup), any later one stops the plan there (ExitAudit, unless an
// escape was suspected); Result.AuditError names the first.
//
// The returned error is set when airlock itself could not launch
// (Result.ExitCode is then ExitSetup) or could not tear down cleanly.
func Launch(ctx context.Context, e *enforcer.Enforcer, plan *Plan, opts Options) (Result, error) {
	setupFailed := func(err error) (Result, error) {
		return Result{ExitCode: ExitSetup, Outcome: OutcomeSetup, Reason: err.Error(), Error: err.Error(), Steps: []StepResult{}}, err
	}
	l, err := newLaunch(e, plan, opts)
	if err != nil {
		return setupFailed(err)
	}
	// The launch is claimed on the audit log while it lives: one whose
	// airlock dies is recorded as abandoned by the log's next writer.
	claim, err := e.Log().BeginRun(l.opts.RunID)
	if err != nil {
		return setupFailed(fmt.Errorf("runbook: %w", err))
	}
	res, err := l.run(ctx)
	return l.seal(claim, res, err)
}

// seal ends the launch's claim once its last record is written: with a
// signing key, a checkpoint is signed and the launch's records proven in
// it (Result.Audit). One that cannot be signed is a record of the launch
// that could not be written (auditFailed).
func (l *launch) seal(claim *audit.RunClaim, res Result, err error) (Result, error) {
	proof, perr := claim.End()
	if perr == nil {
		res.Audit = proof
		return res, err
	}
	if res.AuditError == "" {
		res.AuditError = "the launch's checkpoint was not signed: " + perr.Error()
	}
	auditFailed(&res)
	return res, err
}

func newLaunch(e *enforcer.Enforcer, plan *Plan, opts Options) (*launch, error) {
	if plan == nil || e == nil {
		return nil, errors.New("runbook: a plan and an enforcer are required")
	}
	if errs := validatePlan(plan); len(errs) > 0 {
		return nil, fmt.Errorf("runbook: invalid plan: %w", errs)
	}
	if opts.RunID == "" {
		opts.RunID = "plan-" + strings.TrimPrefix(enforcer.NewRunID(), "run-")
	}
	if !enforcer.ValidSessionID(opts.RunID) {
		return nil, fmt.Errorf("runbook: run id %q: use 1 to 48 letters, digits, '.', '_' or '-', not first '.' or '-' (it names the cgroup and the evidence directory)", opts.RunID)
	}
	l := &launch{plan: plan, opts: opts, enf: e, esc: newEscape()}
	info := e.Policy().Info()
	l.res = Result{TestID: plan.TestID, RunID: opts.RunID, Task: plan.EffectiveTask(), Steps: []StepResult{}, Findings: opts.Findings, Policy: &info}
	l.base = audit.Context{RunID: opts.RunID, Task: l.res.Task, Details: map[string]string{"testId": plan.TestID}}
	return l, nil
}

// run is Launch's body; each stage returns false when the launch ends
// there, with l.res filled in.
func (l *launch) run(ctx context.Context) (Result, error) {
	defer l.closeCanary()
	for _, stage := range []func(context.Context) bool{l.decide, l.prepareImage, l.resolve, l.startSandbox, l.startProbes, l.announce} {
		if !stage(ctx) {
			return l.finish(l.setupErr())
		}
	}
	l.runSteps(ctx)
	err := l.teardown()
	return l.finish(err)
}

// finish sets the result of a launch whose records were not all written
// (auditFailed).
func (l *launch) finish(err error) (Result, error) {
	if p := l.auditErr.Load(); p != nil {
		l.res.AuditError = (*p).Error()
		auditFailed(&l.res)
	}
	return l.res, err
}

// auditFailed sets the result of a launch a record of which was not
// written (AuditError): ExitAudit when steps ran and no escape was
// suspected.
func auditFailed(res *Result) {
	switch res.ExitCode {
	case ExitSetup, ExitDenied, ExitEscalated, ExitEscape:
		return
	}
	if res.Outcome == OutcomePassed {
		res.Reason = "every step of the plan ran, but a record of the launch could not be written to the audit log"
	}
	res.Outcome, res.ExitCode = OutcomeFailed, ExitAudit
}

// setupErr is the error of a launch that ended before any step ran.
func (l *launch) setupErr() error {
	if l.res.Outcome != OutcomeDenied && l.res.Error != "" {
		return errors.New(l.res.Error)
	}
	return nil
}

// refuse ends the launch before any step ran because a start-up check
// failed inside the sandbox: startup_refused is written with why (a
// security event: the monitor alerts), and the result says ExitSetup.
// Whatever was started is stopped.
func (l *launch) refuse(why string, probes []enforcer.ProbeResult) bool {
	l.res.ExitCode, l.res.Outcome, l.res.Reason, l.res.Error = ExitSetup, OutcomeRefused, reasonRefused+why, why
	return l.abandon(RefusedEvent(l.base, why, probes))
}

// setupFailed ends the launch before any step ran because airlock could
// not set it up: setup_failed is written (no security event), and the
// result says ExitNotFound, ExitCannotExec (a step's command not
// installed, or not executable) or ExitSetup. Whatever was started is
// stopped.
func (l *launch) setupFailed(err error) bool {
	why := err.Error()
	l.res.ExitCode, l.res.Outcome, l.res.Reason, l.res.Error = ExitSetup, OutcomeSetup, reasonSetup+why, why
	if st := cmdgate.ResolveStatus(err); st != 0 {
		l.res.ExitCode = st
	}
	return l.abandon(SetupFailedEvent(l.base, why))
}

// abandon records ev, the reason no step ran, and stops whatever was
// started.
func (l *launch) abandon(ev audit.Event) bool {
	_, _ = l.record(ev)
	if l.sess != nil {
		if td, err := l.closeSession(); err != nil {
			l.res.Error += "; and the sandbox did not tear down cleanly: " + err.Error()
		} else {
			l.res.FindingsSkipped = td.FindingsSkipped
		}
	}
	return false
}

// record appends ev durably and shows it, and what the log's hook added,
// to the enforcer's OnEvent (Enforcer.Record; once the sandbox passed its
// probes, Session.Record, so that an alert ev raises may stop the
// launch), keeping the first record the log refused. It returns ev as
// written (with its seq and hash).
func (l *launch) record(ev audit.Event) (audit.Event, error) {
	rec := l.enf.Record
	if l.launched.Load() {
		rec = l.sess.Record
	}
	w, err := rec(ev)
	if err != nil {
		l.auditErr.CompareAndSwap(nil, &err)
	}
	return w, err
}

// stepContext is the audit context of step i (0-based).
func (l *launch) stepContext(i int) audit.Context {
	s := l.plan.Steps[i]
	ctx := l.base
	ctx.Tool, ctx.Command, ctx.Args = s.Tool, s.Command, s.Args
	ctx.Details = map[string]string{"testId": l.plan.TestID, "step": fmt.Sprint(i + 1), "stepName": s.Label(i)}
	return ctx
}

// quoteStep names step i in reasons: `step 2 ("tests")`.
func (l *launch) quoteStep(i int) string {
	s := l.plan.Steps[i]
	if s.Name == "" {
		return fmt.Sprintf("step %d", i+1)
	}
	return fmt.Sprintf("step %d (%q)", i+1, s.Name)
}
