package enforcer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// attempt carries one command, a run's or a session's step (a plan's
// among them), from the command gate's decision (decide) to its Result
// (do): refused, or
// resolved, approved when escalated, and run in its way, its outcome
// recorded. Every error on the way ends in fail.
type attempt struct {
	e   *Enforcer
	sc  *scribe
	t   *tally // the command's, its scribe's until do returns
	way way
	st  StepRequest // what is asked, its Cwd made absolute (StepDir)

	rootfs string           // the image's root, "" for the host's
	bound  approval.Request // what an escalation's approval is bound to (bind)

	base    audit.Context // its records'
	d       decision.Decision
	decided func() error // waits for the decision's record
	res     Result
	cmd     command
	caps    policy.EffectiveCaps
	err     error // returned beside the result of a command that ran
}

// way is where an attempt's command runs: a sandbox of its own (fresh)
// or its session's (Session).
type way interface {
	// prepare sets, before the command is resolved, the attempt's rootfs
	// and the task, workspace and image an approval is bound to.
	prepare(ctx context.Context, a *attempt) error
	// execute runs the admitted command and records its outcome in the
	// attempt's result; an error is airlock's failure to run it.
	execute(ctx context.Context, a *attempt) error
	// settle adjusts the result of a command refused or run.
	settle(res *Result)
	// release frees what execute left; it may be called again.
	release()
}

// newAttempt is the attempt of st in w, recorded through sc under base
// (its run, task and details); its notices go to st.Notices, else its
// stderr.
func (e *Enforcer) newAttempt(sc *scribe, w way, st StepRequest, base audit.Context) *attempt {
	a := &attempt{e: e, sc: sc, way: w, st: st}
	a.t = newTally(a.st.notices())
	a.st.Cwd = StepDir(st.Cwd)
	base.Tool, base.Command, base.Args, base.Env = st.Tool, st.Command, st.Args, st.Env
	recordDir(&base, a.st.Cwd)
	a.base = base
	sc.cur.Store(a.t)
	return a
}

// decide asks the command gate and records its decision, durable before
// the action it allows: its write and fsync overlap the resolution and a
// sandbox's building, and every later step waits for them (decided)
// before it records anything or releases the command.
func (a *attempt) decide(runID, session string, step int) {
	a.d = a.e.cmd.Decide(a.st.Tool, a.st.Command, a.st.Args, a.st.Cwd)
	a.res = newResult(runID, session, step, a.d, time.Now())
	recorded, ev := make(chan error, 1), audit.FromDecision(a.d, a.base)
	go func() { recorded <- a.sc.record(ev) }()
	a.decided = sync.OnceValue(func() error { return <-recorded })
}

// do carries the decided attempt to its result.
func (a *attempt) do(ctx context.Context) (Result, error) {
	defer a.t.end()
	defer a.sc.cur.Store(nil)
	defer a.way.release()
	if err := a.carry(ctx); err != nil {
		return a.fail(err)
	}
	a.t.into(&a.res)
	a.way.settle(&a.res)
	res, err := a.sc.finish(a.res)
	if a.err != nil {
		err = errors.Join(a.err, err)
	}
	return res, err
}

// carry takes a denied command to its refusal, and an allowed or
// escalated one to its run: resolved first, as an escalation's approval
// is bound to what it would run.
func (a *attempt) carry(ctx context.Context) error {
	if a.d.Verdict == decision.Deny {
		_, err := a.admit(ctx)
		return err
	}
	if err := a.way.prepare(ctx, a); err != nil {
		return err
	}
	cmd, err := a.e.commandOf(a.rootfs, a.d, a.st.Command, a.st.Args, a.st.Cwd)
	if err != nil {
		return err
	}
	a.cmd, a.base.Path = cmd, cmd.path
	if a.t.notices != nil {
		for _, m := range a.e.scriptMissing(a.rootfs, a.d.Script) {
			a.t.notices.Printf("airlock: script: %s", m)
		}
	}
	a.caps = a.e.pol.CapsFor(a.st.Tool)
	if t := a.st.Timeout; t > 0 && t.Seconds() < a.caps.WallSeconds {
		a.caps.WallSeconds = t.Seconds()
	}
	if !a.d.Allowed() {
		if err := a.bind(ctx); err != nil {
			return err
		}
		if ok, err := a.admit(ctx); !ok {
			return err
		}
	}
	a.res.Path = cmd.path
	return a.way.execute(ctx, a)
}

// environ is the command's whole environment with g's variables.
func (a *attempt) environ(g *wayOut) []string {
	return a.cmd.environ(childEnv(a.e.pol.SearchPath(), g.Env(), a.st.Env))
}

// fail ends the attempt on err, airlock's failure to run the command:
// its way released, then, after the decision, the record that it did
// not run, and the result with its status (setupStatus).
func (a *attempt) fail(err error) (Result, error) {
	a.way.release()
	if derr := a.decided(); derr != nil && derr != err {
		err = errors.Join(err, derr)
	}
	a.res.ExitCode = setupStatus(err)
	a.res.Error = err.Error()
	_ = a.sc.record(notRunEvent(a.base, "airlock could not run the command: ", err))
	a.t.into(&a.res)
	res, _ := a.sc.finish(a.res)
	return res, err
}
