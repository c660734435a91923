package runbook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"syscall"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// runSteps runs the steps in order until one fails without
// continueOnFailure, the session ends, the operator interrupts, or an
// escape is suspected.
func (l *launch) runSteps(ctx context.Context) {
	for i := range l.plan.Steps {
		if l.esc.fired() {
			break
		}
		ok, goOn := l.execStep(ctx, i)
		l.checkAfterStep(i + 1)
		switch {
		case l.esc.fired():
			l.esc.wait()
			return
		case ctx.Err() != nil:
			l.halt(OutcomeFailed, fmt.Sprintf("the launch was interrupted during %s: %v", l.quoteStep(i), context.Cause(ctx)))
			l.res.ExitCode = enforcer.Interrupted(ctx)
			return
		case l.auditErr.Load() != nil:
			// The trail can no longer prove what happens next.
			l.halt(OutcomeFailed, fmt.Sprintf("the audit log refused an event during %s, so no later step may run: %v", l.quoteStep(i), *l.auditErr.Load()))
			return
		case !goOn:
			l.halt(OutcomeFailed, fmt.Sprintf("the sandbox ended during %s, so no later step could run: %s", l.quoteStep(i), l.res.Steps[i].Error))
			return
		case !ok && !l.plan.Steps[i].ContinueOnFailure:
			l.halt(OutcomeFailed, fmt.Sprintf("%s failed (%s) and does not say continueOnFailure: the plan stopped there", l.quoteStep(i), describeOutcome(l.res.Steps[i])))
			return
		}
	}
	if !l.esc.fired() && l.res.Outcome == "" {
		l.res.Outcome, l.res.ExitCode = OutcomePassed, ExitOK
		l.res.Reason = fmt.Sprintf("every step of the plan ran: %d passed, %d failed with continueOnFailure", l.count(StepPassed), l.count(StepFailed))
	}
}

// halt records why the plan stopped early; the later steps stay not_run.
func (l *launch) halt(outcome, reason string) {
	l.res.Outcome, l.res.ExitCode, l.res.Reason = outcome, ExitStepFailed, reason
}

func (l *launch) count(status string) int {
	n := 0
	for _, s := range l.res.Steps {
		if s.Status == status {
			n++
		}
	}
	return n
}

// execStep runs step i (0-based) as a step of the launch's session
// (enforcer.Session.ExecDecided: its outcome recorded), with the
// decision the preflight recorded. ok says it passed; goOn that the
// sandbox can run another step.
func (l *launch) execStep(ctx context.Context, i int) (ok, goOn bool) {
	s := l.plan.Steps[i]
	st := enforcer.StepRequest{Tool: s.Tool, Command: s.Command, Args: s.Args, Stdout: l.opts.Stdout, Stderr: l.opts.Stderr}
	l.step.Store(int64(i + 1))
	stop := l.watchDuring(i + 1)
	out, err := l.sess.ExecDecided(ctx, l.stepContext(i), st, l.decisions[i])
	stop()
	l.step.Store(0)
	if out.AuditError != "" {
		failed := errors.New(out.AuditError)
		l.auditErr.CompareAndSwap(nil, &failed)
	}
	r := &l.res.Steps[i]
	if out.Path != "" { // a workspace program's file, as it ran
		r.Path = out.Path
	}
	r.Signal, r.KilledBy = out.Signal, out.KilledBy
	r.WallMs, r.CPUMs, r.PeakMemoryBytes = out.WallMs, out.CPUMs, out.PeakMemoryBytes
	r.Status, r.ExitCode = StepFailed, new(out.ExitCode)
	if out.CommandExitCode != nil {
		r.ExitCode = out.CommandExitCode
	}
	if out.EscapeSuspected != "" {
		l.signal(Signal{Name: SignalInitDied, Step: i + 1, Detail: out.EscapeSuspected})
	}
	switch {
	case l.esc.fired() && (err != nil || out.EscapeSuspected != ""):
		r.Status, r.Error, r.ExitCode = StepHalted, cmp.Or(out.Error, out.EscapeSuspected), nil
		return false, false
	case err != nil && out.Error != "": // the sandbox ended under it
		r.Error, r.ExitCode = out.Error, nil
		return false, false
	case out.Error != "": // it could not start inside: the sandbox goes on
		r.Error = out.Error
		return false, true
	}
	if *r.ExitCode == 0 && out.Signal == 0 && out.KilledBy == nil {
		r.Status = StepPassed
	}
	if out.Signal == int(syscall.SIGSYS) {
		l.signal(Signal{Name: SignalSeccompKill, Step: i + 1,
			Detail: fmt.Sprintf("%s died of SIGSYS: the seccomp filter killed it for an escape system call (a foreign-architecture or x32 call)", l.quoteStep(i))})
	}
	return r.Status == StepPassed, true
}

// describeOutcome says how a step ended: "exit status 3", "signal 9",
// "killed by the wall cap".
func describeOutcome(r StepResult) string {
	switch {
	case r.KilledBy != nil:
		return "killed by the " + *r.KilledBy + " cap"
	case r.Signal != 0:
		return "died of signal " + strconv.Itoa(r.Signal)
	case r.Error != "":
		return r.Error
	}
	if r.ExitCode == nil {
		return "did not run"
	}
	return "exit status " + strconv.Itoa(*r.ExitCode)
}

// egressRecorder records the proxy's events with the step running now,
// durably, before any connection each allows; a refused always-blocked
// destination is a metadata access attempt.
func (l *launch) egressRecorder() enforcer.EgressRecorder {
	return enforcer.EgressRecorder{
		Context: func() audit.Context {
			ctx := l.base
			ctx.Details = maps.Clone(l.base.Details)
			if n := int(l.step.Load()); n > 0 {
				ctx.Details["step"] = strconv.Itoa(n)
				ctx.Tool = l.plan.Steps[n-1].Tool
			}
			return ctx
		},
		Record: func(ev audit.Event, _ bool) error {
			_, err := l.record(ev)
			return err
		},
		Blocked: func(ctx audit.Context, why string) {
			n, _ := strconv.Atoi(ctx.Details["step"])
			l.signal(Signal{Name: SignalMetadata, Step: n, Detail: "the egress proxy refused an always-blocked destination: " + why})
		},
	}
}
