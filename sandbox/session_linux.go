package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// Pid returns the session init's process id on the host.
func (ss *Session) Pid() int { return ss.sb.cmd.Process.Pid }

// exec runs step n in a cgroup of its own, through the init (Exec); it
// reports whether ctx ended it.
func (ss *Session) exec(ctx context.Context, st Step, caps StepCaps, n int) (Result, bool, error) {
	res := Result{ExitCode: -1}
	sg := ss.takeStepGroup(n)
	if sg.err != nil {
		return res, false, fmt.Errorf("%w: step %d: %w", ErrStepStart, n, sg.err)
	}
	want := limits.ChildCaps{MemoryBytes: caps.MemoryBytes, Tasks: caps.Tasks}
	defer func() { go sg.release() }() // not on the way of the step's result
	child := sg.child
	if err := child.Limit(want); err != nil {
		return res, false, fmt.Errorf("%w: step %d: %w", ErrStepStart, n, err)
	}
	place, err := ss.placeFiles(sg)
	if err != nil {
		return res, false, fmt.Errorf("%w: step %d: %w", ErrStepStart, n, err)
	}
	w := ss.newStepWatch(n, child)
	sio, err := newStepIO(st, newOutputCap(caps.OutputBytes, func() { w.kill(limits.KilledByOutput) }))
	if err != nil {
		return res, false, fmt.Errorf("sandbox: step %d: %w", n, err)
	}
	defer sio.close()
	before, _ := ss.sb.group.Stats()
	if st.Ready != nil {
		if err := st.Ready(); err != nil {
			return res, false, err
		}
	}
	req := initproc.Message{Kind: initproc.MsgExec, Step: n, Exec: &initproc.ExecStep{Path: st.Path, Tree: st.Tree, Args: st.Args, Env: st.Env, Dir: st.Dir,
		Groups: len(place) / 2, Rlimits: initRlimits(child.Rlimits())}}
	fds := sio.childFDs()
	for _, f := range place {
		fds = append(fds, int(f.Fd()))
	}
	if err := ss.sb.c.Send(req, fds...); err != nil {
		ss.end()
		return res, false, fmt.Errorf("%w: %w", ErrSessionEnded, err)
	}
	sio.start()
	m, err := ss.recvStep(n)
	switch {
	case err != nil:
		return res, false, err
	case m.Kind == initproc.MsgFailed:
		sio.wait()
		return res, false, fmt.Errorf("%w: step %d: %s", ErrStepStart, n, m.Error)
	case m.Kind != initproc.MsgStarted:
		ss.end()
		return res, false, fmt.Errorf("%w: protocol: want started, got %q", ErrSessionEnded, m.Kind)
	}
	res.Path = m.Path
	started := time.Now()
	ss.sb.next = ss.makeStepGroup(n+1, want)
	w.start(ctx, caps, before)
	m, err = ss.recvStep(n)
	w.stop()
	res.Wall = time.Since(started)
	sio.wait()
	if err != nil {
		return res, false, err
	}
	if m.Kind != initproc.MsgExited || m.Status == nil {
		ss.end()
		return res, false, fmt.Errorf("%w: protocol: want exited, got %q", ErrSessionEnded, m.Kind)
	}
	ss.stepResult(&res, *m.Status, w, before, caps)
	res.Receipt = ss.stepReceipt(child)
	return res, w.ctxErr.Load(), nil
}

// probe has the init run the start-up probes (Probe).
func (ss *Session) probe(req ProbeRequest) ([]ProbeResult, error) {
	if err := ss.sb.c.Send(initproc.Message{Kind: initproc.MsgProbe, Probe: &req}); err != nil {
		ss.end()
		return nil, fmt.Errorf("%w: %w", ErrSessionEnded, err)
	}
	m, err := ss.recv("probes", func(m initproc.Message) bool { return m.Kind == initproc.MsgProbed })
	if err != nil {
		return nil, err
	}
	return m.Probes, nil
}

// recvStep reads the init's next message about step n.
func (ss *Session) recvStep(n int) (initproc.Message, error) {
	return ss.recv(fmt.Sprintf("step %d", n), func(m initproc.Message) bool { return m.Step == n })
}

// recv reads the init's messages until one that want takes, during what.
// A broken control socket means the init is gone: the session has ended.
func (ss *Session) recv(what string, want func(initproc.Message) bool) (initproc.Message, error) {
	for {
		m, fds, err := ss.sb.c.Recv()
		initproc.CloseAll(fds)
		if err != nil {
			return m, ss.initGone(what, err)
		}
		if want(m) {
			return m, nil
		}
	}
}

// initGone ends the session after its control socket broke (err) during
// what, and says why: ErrInitDied too unless airlock ended the init.
func (ss *Session) initGone(what string, err error) error {
	died := !ss.sb.killed.Load()
	ss.end()
	if died {
		return fmt.Errorf("%w: %w: %s: %w%s", ErrSessionEnded, ErrInitDied, what, err, ss.sb.initOut.said())
	}
	return fmt.Errorf("%w: %s: the init is gone: %w", ErrSessionEnded, what, err)
}

// stepWatch enforces one step's wall-clock and CPU caps and the session's
// memory and tasks caps on it, by asking the init to kill the step; its
// output cap (stepIO) kills through it too.
type stepWatch struct {
	ss       *Session
	step     int
	child    *limits.Child
	killedBy atomic.Pointer[limits.KilledBy]
	ctxErr   atomic.Bool

	mu                sync.Mutex // held by the timers' callbacks while they act, and by stop
	stopped           bool
	wall, tick, grace *time.Timer
	stopCtx           func() bool
}

// stop ends the watch: when it returns, no timer of it acts any more.
func (w *stepWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	for _, t := range []*time.Timer{w.wall, w.tick, w.grace} {
		if t != nil {
			t.Stop()
		}
	}
	w.mu.Unlock()
	if w.stopCtx != nil {
		w.stopCtx()
	}
}

func (w *stepWatch) kind() string {
	if k := w.killedBy.Load(); k != nil {
		return string(*k)
	}
	return ""
}

// kill records k (unless a cap was recorded first; "" records nothing)
// and has the init kill the step.
func (w *stepWatch) kill(k limits.KilledBy) {
	if k != "" {
		w.killedBy.CompareAndSwap(nil, &k)
	}
	w.ss.sb.c.Send(initproc.Message{Kind: initproc.MsgKill, Step: w.step})
}

// stepPoll is how often a step's counters are read, as the single run's
// watch does (limits' poll interval).
const stepPoll = 50 * time.Millisecond

// newStepWatch makes the watch of step n, in its group child; start
// starts it.
func (ss *Session) newStepWatch(n int, child *limits.Child) *stepWatch {
	return &stepWatch{ss: ss, step: n, child: child}
}

// stats reads the session's counters with the step group's OOM kills and
// refused forks added (the session's do not count a child's on cgroup v1),
// and the step group's peak memory.
func (w *stepWatch) stats() (limits.Stats, int64, error) {
	st, err := w.ss.sb.group.Stats()
	c := w.child.Stats()
	st.OOMKills += c.OOMKills
	st.TasksLimitHits += c.TasksLimitHits
	return st, c.PeakMemoryBytes, err
}

// start watches the step from now until stop, with timers rather than a
// goroutine of its own: a step of /bin/true is over before a watching
// goroutine would have been scheduled, and stop would wait for it.
func (w *stepWatch) start(ctx context.Context, caps StepCaps, before limits.Stats) {
	cpuKnown := w.ss.sb.group.Provides(limits.RequireCgroupCPU)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wall = time.AfterFunc(caps.Wall, func() { w.fire(limits.KilledByWall) })
	w.tick = time.AfterFunc(stepPoll, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return // the step's group may be gone
		}
		if now, _, err := w.stats(); err == nil {
			if k := tripped(before, now, caps, cpuKnown); k != "" {
				w.kill(k)
				return
			}
		}
		w.tick.Reset(stepPoll)
	})
	w.stopCtx = context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		w.ctxErr.Store(true)
		if t := TerminationOf(ctx); t != nil && w.ss.sb.signal(t.Signal) == nil {
			// The step's grace period: it may end on its own (stop),
			// else it is killed, a cap still counting.
			w.grace = time.AfterFunc(t.Grace, func() { w.fire("") })
			return
		}
		w.kill("")
	})
}

// fire kills the step for k unless the watch has stopped. It holds mu
// while it asks, so that once stop returns nothing of the watch acts.
func (w *stepWatch) fire(k limits.KilledBy) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.kill(k)
	}
}

// tripped names the cap a step has exceeded since before, if any: an OOM
// kill, a refused fork, then the CPU time.
func tripped(before, now limits.Stats, caps StepCaps, cpuKnown bool) limits.KilledBy {
	switch {
	case now.OOMKills > before.OOMKills:
		return limits.KilledByMemory
	case now.TasksLimitHits > before.TasksLimitHits:
		return limits.KilledByPids
	case cpuKnown && now.CPU-before.CPU >= caps.CPU:
		return limits.KilledByCPU
	}
	return ""
}

// stepResult fills res from the step's status and the group's counters.
func (ss *Session) stepResult(res *Result, st initproc.ExitStatus, w *stepWatch, before limits.Stats, caps StepCaps) {
	res.ExitCode, res.Signal = st.Code, st.Signal
	res.KilledBy = w.kind()
	res.CPU = time.Duration(st.UserUs+st.SysUs) * time.Microsecond
	res.PeakMemoryBytes = st.MaxRSS * 1024
	after, peak, err := w.stats()
	if peak > 0 {
		res.PeakMemoryBytes = peak // the step's group's, every process's
	}
	cpuKnown := ss.sb.group.Provides(limits.RequireCgroupCPU)
	if err == nil && cpuKnown {
		res.CPU = after.CPU - before.CPU
	}
	if res.KilledBy == "" && err == nil {
		// A cap that tripped between the last poll and the step's end.
		res.KilledBy = string(tripped(before, after, caps, cpuKnown))
	}
	if res.KilledBy == "" {
		// RLIMIT_CPU is the session's cap, for every process.
		res.KilledBy = string(limits.SignalCause(syscall.Signal(res.Signal), res.CPU, ss.sb.cfg.Caps.CPU))
	}
}

// sessionReceipt is how a session's caps hold, for its receipt.
const sessionReceipt = "one init runs each step in turn; memory and tasks per step (the step's own cgroup, else rlimits) and per session; disk the session's; wall clock and CPU per step"

// close is Close's teardown, every process dead.
func (ss *Session) close() (Teardown, error) {
	ss.dropNextGroup()
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	ss.closing = true
	s := ss.sb
	td := Teardown{Steps: ss.steps, Frozen: ss.frozen.Load() != nil}
	var errs []error
	if fz := ss.frozen.Load(); fz != nil {
		// Killed tasks of a v1 freezer die only once thawed.
		if err := fz.thaw(s.group); err != nil {
			errs = append(errs, err)
		}
	}
	s.cmd.Wait()
	if err := s.group.KillAll(); err != nil {
		errs = append(errs, fmt.Errorf("sandbox: kill the tree: %w", err))
	}
	stats, err := s.group.Stats()
	if err != nil {
		errs = append(errs, fmt.Errorf("sandbox: read the group's stats: %w", err))
	}
	td.CPU, td.PeakMemoryBytes = stats.CPU, stats.PeakMemoryBytes
	if s.dst != nil && s.finds >= 0 {
		skipped, err := s.copyOut()
		td.FindingsSkipped = skipped
		if err != nil {
			errs = append(errs, err)
		}
	}
	td.Receipt = s.fullReceipt()
	td.Receipt["session"] = sessionReceipt
	if err := s.teardownErr(nil); err != nil {
		errs = append(errs, err)
	}
	return td, errors.Join(errs...)
}

// copyIn sends dir to the init as the workspace, keeping the stream as
// the original (CopyIn).
func (ss *Session) copyIn(dir string) error {
	s := ss.sb
	orig, err := openOriginal()
	if err != nil {
		return err
	}
	ss.fdMu.Lock()
	s.orig = orig
	ss.fdMu.Unlock()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	err = s.c.Send(initproc.Message{Kind: initproc.MsgCopyIn}, int(r.Fd()))
	r.Close()
	if err != nil {
		w.Close()
		return err
	}
	sent := make(chan error, 1)
	go func() {
		defer w.Close()
		sent <- sendWorkspace(dir, s.workspaceWriter(w), s.cfg.Caps.DiskWriteBytes, int(initproc.DiskInodes(s.cfg.Caps.DiskWriteBytes)))
	}()
	m, fds, err := s.c.Recv()
	initproc.CloseAll(fds)
	w.Close() // the init is done reading, or gone: unblock the sender
	serr := <-sent
	switch {
	case err != nil:
		return errors.Join(serr, fmt.Errorf("the init is gone: %w", err))
	case m.Kind == initproc.MsgFailed:
		return errors.Join(serr, fmt.Errorf("%s: %s", m.Stage, m.Error))
	case m.Kind != initproc.MsgCopied:
		return fmt.Errorf("protocol: want copied, got %q", m.Kind)
	}
	return serr
}
