package runbook

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// reasonTornDown is the fixed reason of sandbox_torn_down.
const reasonTornDown = "sandbox torn down: every process ended, cgroup and mounts removed, workspace copy deleted, findings copied out"

// closeCanary removes the canary after the launch.
func (l *launch) closeCanary() {
	if l.canary != nil {
		_ = l.canary.Close()
	}
}

// teardown ends a launch whose steps have run (or were halted): the
// sandbox goes, the proxy stops, teardown is verified from the host,
// suspected-escape artifacts are marked, and sandbox_torn_down is
// written. It returns the teardown's error, if any.
func (l *launch) teardown() error {
	l.tornDown.Store(true) // a signal from now on is recorded, with nothing left to freeze
	if l.esc.fired() {
		l.esc.wait()
	}
	td, err := l.closeSession()
	l.res.FindingsSkipped = td.FindingsSkipped
	if errors.Is(err, enforcer.ErrFindingsLost) && l.res.ExitCode != ExitEscape {
		// Data the caller asked to keep is not there: a failed launch,
		// whatever the steps did (an escape's 121 says more, and wins).
		if l.res.Outcome == OutcomePassed {
			l.res.Outcome, l.res.Reason = OutcomeFailed, "every step of the plan ran, but "+strings.TrimPrefix(err.Error(), "sandbox: ")
		}
		l.res.ExitCode = ExitFindings
	}
	l.res.Receipt = td.Receipt
	if l.res.Receipt == nil {
		l.res.Receipt = map[string]string{}
	}
	l.res.Receipt["command"] = "airlock command gate (policy " + l.enf.Policy().Digest + "), every step decided before the launch"
	l.res.Receipt["egress"] = "airlock egress proxy on the listener the sandbox's init opened (where, and what else holds egress: network), task " + l.res.Task
	l.res.Receipt["runbook"] = escapeChecks
	left := l.residue()
	if left != "" {
		err = errors.Join(err, errors.New("runbook: teardown left "+left))
	}
	if l.esc.fired() {
		l.finishEscape()
	}
	if err != nil {
		l.res.Error = err.Error()
	}
	ctx := l.base
	ctx.Event = audit.EventSandboxTornDown
	ctx.Details = map[string]string{"testId": l.plan.TestID, "outcome": l.res.Outcome,
		"stepsRun": strconv.Itoa(td.Steps), "findingsSkipped": strconv.Itoa(len(td.FindingsSkipped))}
	if l.res.Untrusted {
		ctx.Details["untrusted"] = "true"
		ctx.Details["evidence"] = l.res.Evidence
	}
	reason := reasonTornDown
	if err != nil {
		reason = "sandbox teardown incomplete: " + err.Error()
	}
	_, rerr := l.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: reason, Context: ctx})
	return errors.Join(err, rerr)
}

// residue checks from the host that nothing of the sandbox is left: no
// process of its pid namespace or descended from its init. The cgroup,
// mounts and namespaces are the sandbox's to remove (Session.Close), and
// go with the last process.
func (l *launch) residue() string {
	if l.procs == nil {
		return ""
	}
	var left map[int]string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if left = l.procs.left(); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) == 0 {
		return ""
	}
	var pids []string
	for pid, why := range left {
		pids = append(pids, fmt.Sprintf("%d (%s)", pid, why))
	}
	return "processes alive: " + strings.Join(pids, ", ")
}

// finishEscape sets the result of a launch halted by a suspected escape
// and marks the findings untrusted.
func (l *launch) finishEscape() {
	sigs := l.esc.list()
	names := make([]string, 0, len(sigs))
	for _, s := range sigs {
		names = append(names, s.Name)
	}
	l.res.Signals = sigs
	l.res.Untrusted = true
	l.res.Outcome, l.res.ExitCode = OutcomeEscape, ExitEscape
	l.res.Reason = "escape suspected (" + strings.Join(names, ", ") + "): the plan was halted, the sandbox frozen and its evidence kept; every artifact of this run is untrusted"
	if n := int(l.step.Load()); n > 0 && l.res.Steps[n-1].Status == StepNotRun {
		l.res.Steps[n-1].Status = StepHalted
	}
	if l.opts.Findings != "" {
		if err := enforcer.MarkUntrusted(l.opts.Findings, "in which an escape was suspected", l.res.Reason, l.res.Evidence); err != nil {
			l.res.Error = "runbook: mark the findings untrusted: " + err.Error()
		}
	}
}
