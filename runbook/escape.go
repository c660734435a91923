package runbook

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// duringStepPoll is how often the signals that can be read from the host
// alone (a process outside the cgroup, the canary listener) are checked
// while a step runs; the rest are checked after each step.
const duringStepPoll = 250 * time.Millisecond

// escape is the suspected-escape state of a launch.
type escape struct {
	mu      sync.Mutex
	signals []Signal
	started atomic.Bool   // the first signal fired: the procedure started
	doneCh  chan struct{} // closed when the procedure has finished
}

func newEscape() *escape { return &escape{doneCh: make(chan struct{})} }

func (e *escape) fired() bool { return e.started.Load() }

// wait waits for the procedure to finish; call it only once fired.
func (e *escape) wait() { <-e.doneCh }

func (e *escape) list() []Signal {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Signal(nil), e.signals...)
}

// signal records fired escape signals and, on the first, starts the
// procedure in its own goroutine (the caller may be the proxy, which the
// procedure must not wait for). Later signals are only recorded.
func (l *launch) signal(sigs ...Signal) {
	if len(sigs) == 0 {
		return
	}
	l.esc.mu.Lock()
	l.esc.signals = append(l.esc.signals, sigs...)
	l.esc.mu.Unlock()
	if !l.esc.started.CompareAndSwap(false, true) {
		return
	}
	if l.tornDown.Load() {
		// The sandbox is going or gone: nothing to freeze or keep, but
		// the suspicion is recorded all the same.
		defer close(l.esc.doneCh)
		l.recordSuspicion(sigs[0], "not frozen: the sandbox was already being torn down", "")
		return
	}
	go func() {
		defer close(l.esc.doneCh)
		l.suspect(sigs[0])
	}()
}

// alerted is the alert stop of the launch's session: an alert of the
// policy's session.onAlert that one of the launch's records raised is an
// escape signal; one raised once the procedure is under way (by its
// escape_suspected, say) is its consequence, not another signal.
func (l *launch) alerted(_ audit.Event, why string) {
	if l.esc.fired() {
		return
	}
	l.signal(Signal{Name: SignalAlert, Step: int(l.step.Load()), Detail: why})
}

// suspect is the suspected-escape procedure (enforcer.Suspect): freeze
// the sandbox where it stands, record escape_suspected durably, snapshot
// the evidence (the sandbox's processes, mounts, network and workspace,
// kept; the host's watched files; the audit trail since the launch),
// then end the sandbox, which kills a step still running. The launch
// then tears down and marks the findings untrusted.
func (l *launch) suspect(first Signal) {
	dir, err := enforcer.Suspect(l.sess, enforcer.Suspicion{Under: l.opts.EvidenceDir, Name: l.opts.RunID,
		Record:  func(freeze, evidence string) { l.recordSuspicion(first, freeze, evidence) },
		Collect: l.writeEvidence})
	l.res.Evidence = dir
	if err != nil {
		l.res.Error = "runbook: " + err.Error()
	}
	_, _ = l.closeSession()
}

// recordSuspicion writes escape_suspected for the first signal.
func (l *launch) recordSuspicion(first Signal, freeze, evidence string) {
	ctx := l.base
	ctx.Event = audit.EventEscapeSuspected
	ctx.Details = map[string]string{"testId": l.plan.TestID, "signal": first.Name, "detail": first.Detail,
		"step": strconv.Itoa(first.Step), "freeze": freeze, "evidence": evidence}
	reason := "escape suspected (" + first.Name + "): the plan was halted and the sandbox frozen, its evidence kept; every artifact of this run is untrusted"
	if evidence == "" {
		reason = "escape suspected (" + first.Name + ") while the sandbox was torn down: nothing was left to freeze or keep; every artifact of this run is untrusted"
	}
	_, _ = l.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionAlert, Context: ctx, Reason: reason})
}

// watchDuring checks, while step n runs, the signals the host alone can
// see; the returned function stops the watch.
func (l *launch) watchDuring(n int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(duringStepPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if l.esc.fired() {
					return
				}
				l.signal(l.hostSignals(n)...)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// hostSignals are the checks that read only host state and take well
// under a millisecond each: processes outside the cgroup, the canary.
func (l *launch) hostSignals(n int) []Signal {
	var sigs []Signal
	if out := l.procs.outsideCgroup(); len(out) > 0 {
		sigs = append(sigs, Signal{Name: SignalCgroup, Step: n, Detail: strings.Join(out, "; ")})
	}
	if a := l.canary.Accepted(); a > 0 {
		sigs = append(sigs, Signal{Name: SignalCanary, Step: n,
			Detail: fmt.Sprintf("the host's canary listener on loopback accepted %d connection(s)", a)})
	}
	return sigs
}

// checkAfterStep runs every escape check after step n (1-based): the host
// checks, on macOS the step's processes left, the audit chain from the
// launch on, the watched host paths, and the start-up probes again
// inside the sandbox.
func (l *launch) checkAfterStep(n int) {
	if h := l.opts.test; h != nil && h.afterStep != nil {
		h.afterStep(n, l.sess.Pid())
	}
	if l.esc.fired() {
		return
	}
	sigs := l.hostSignals(n)
	if out := l.procs.afterStep(); len(out) > 0 {
		sigs = append(sigs, Signal{Name: SignalLeftAfterStep, Step: n, Detail: strings.Join(out, "; ")})
	}
	if err := l.chain.check(); err != nil {
		sigs = append(sigs, Signal{Name: SignalAuditChain, Step: n, Detail: err.Error()})
	}
	if ch := l.hostBefore.changes(snapshotHost(l.hostFiles, l.hostTrees, l.unwatched())); len(ch) > 0 {
		sigs = append(sigs, Signal{Name: SignalHostWrite, Step: n, Detail: strings.Join(ch, "; ")})
	}
	if !l.esc.fired() {
		req := l.canary.Request()
		if h := l.opts.test; h != nil && h.reprobe != nil {
			req = h.reprobe(n, req)
		}
		res, err := l.sess.Probe(req)
		why := ProbeFailure(res)
		switch {
		case errors.Is(err, enforcer.ErrInitDied):
			sigs = append(sigs, Signal{Name: SignalInitDied, Step: n, Detail: err.Error()})
		case errors.Is(err, enforcer.ErrSandboxEnded), errors.Is(err, enforcer.ErrFrozen):
			// Nothing is left to probe: the plan halts on its own.
			why = ""
		case err != nil:
			why = err.Error()
		}
		if why != "" {
			sigs = append(sigs, Signal{Name: SignalProbe, Step: n, Detail: why})
		}
	}
	l.signal(sigs...)
}
