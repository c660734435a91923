//go:build linux || darwin

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// Session is one sandbox that runs several commands, one after another
// (StartSession): on Linux one init runs each step in turn; on macOS one
// box whose copies live from step to step, each step a command of its
// own under its own profile. Exec, Freeze, Evidence and Close are safe
// for concurrent use; Execs run one at a time.
type Session struct {
	sb *Sandbox

	mu     sync.Mutex // held by Exec for a whole step, and by Close
	fdMu   sync.Mutex // held by Receipt, SetFindings, Close's teardown and, on Linux, Evidence, Changes and FindingsNow (the sandbox's descriptors, the findings destination)
	steps  int
	ended  atomic.Bool
	frozen atomic.Pointer[freezeState]

	closing bool // under fdMu: Close's teardown has begun
	copied  bool // under mu: CopyIn was called

	closeOnce sync.Once
	teardown  Teardown
	closeErr  error
}

// StartSession builds one sandbox exactly as Start does — on Linux the
// same namespaces, filesystem view, privilege drop, cgroup and proxy
// listener; on macOS the same box and profile — and the start-up probes
// once, but runs no command: each Exec then runs one step in it, until
// Close.
//
// cfg.Path, Args, Env, Dir, Stdin, Stdout and Stderr must be empty (each
// Step brings its own). The caps apply as follows on Linux:
//
//   - memory and tasks are the session's and each step's: the session's
//     cgroup holds every step, and files written to /tmp, /workspace and
//     /findings persist from step to step and stay charged to it; each
//     step runs in a child cgroup of its own with its StepCaps' memory
//     and tasks (or rlimits on the step's processes where the host gives
//     no cgroup v1 child; the step's Result.Receipt says which). A step
//     whose process the kernel kills for memory, or that hits the tasks
//     cap, is killed (KilledBy "memory" or "pids"); the session goes on.
//   - disk (the writable tmpfs, which /tmp, /workspace, /findings and
//     /dev/shm share, and RLIMIT_FSIZE) and open files (RLIMIT_NOFILE)
//     are the session's, the same for every step.
//   - wall clock, CPU time and output are per step: cfg.Caps.Wall,
//     cfg.Caps.CPU and cfg.Caps.OutputBytes are each step's defaults, and
//     a Step's own Caps replace them (no higher than the session's: every
//     process also carries cfg.Caps.CPU as RLIMIT_CPU, the session's init
//     too, so a session's init lives for at most that much CPU time of
//     its own, several thousand steps). The session as a whole lasts
//     until Close or until ctx is done.
//
// On macOS memory and tasks are watched per step: every process of a
// step is killed when it ends, so nothing of the session runs between
// steps.
//
// A step that a cap kills ends only that step (its processes, and every
// process it left behind), unless Step.EndSessionOnKill says otherwise.
func StartSession(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.Path != "" || cfg.Args != nil || cfg.Env != nil || cfg.Dir != "" || cfg.Stdin != nil || cfg.Stdout != nil || cfg.Stderr != nil {
		return nil, errors.New("sandbox: session: Path, Args, Env, Dir and the streams belong to each Step, not to the session's Config")
	}
	cfg, err := normalizeView(cfg)
	if err != nil {
		return nil, err
	}
	sb, err := startSandbox(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	return &Session{sb: sb}, nil
}

// Listener returns the proxy's listener, nil unless Config.Proxy: on
// Linux inside the session's network namespace, on macOS on loopback.
// Close closes it.
func (ss *Session) Listener() net.Listener { return ss.sb.lis }

// Exec runs one step and waits for it and every process it left: its
// result, or an error when it could not run (ErrStepStart: the session
// goes on; ErrSessionEnded or ErrFrozen: it does not). When ctx is done
// the step is killed (for a Terminated cause, signalled first) and Exec
// returns its result with ctx's error.
func (ss *Session) Exec(ctx context.Context, st Step) (Result, error) {
	if err := ss.usable(); err != nil {
		return Result{ExitCode: -1}, err // without waiting for a step in flight
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := ss.usable(); err != nil {
		return Result{ExitCode: -1}, err
	}
	st, caps, err := normalizeStep(st, ss.sb.cfg.Caps)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	ss.steps++
	res, ctxDone, err := ss.exec(ctx, st, caps, ss.steps)
	if err != nil {
		return res, err
	}
	if res.KilledBy != "" && st.EndSessionOnKill {
		ss.end()
	}
	if ctxDone {
		return res, ctx.Err()
	}
	return res, nil
}

// usable says why no step may start now, if so.
func (ss *Session) usable() error {
	switch {
	case ss.frozen.Load() != nil:
		return ErrFrozen
	case ss.ended.Load():
		return ErrSessionEnded
	}
	return nil
}

// end kills the session's every process, on Linux the init included;
// Exec then fails with ErrSessionEnded, and Close tears down.
func (ss *Session) end() {
	ss.ended.Store(true)
	ss.sb.killAll()
}

// Probe runs the start-up probes again, between steps (on Linux from the
// init inside the session, on macOS under a step's profile), and returns
// every probe's outcome: the runbook re-runs them after each step, and a
// probe that fails after launch is a sign of escape. It fails like Exec
// on a frozen or ended session.
func (ss *Session) Probe(req ProbeRequest) ([]ProbeResult, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := ss.usable(); err != nil {
		return nil, err
	}
	return ss.probe(req)
}

// Close ends the session: it kills every process (on Linux the init
// included), copies the findings out to Config.Findings, closes the
// listener and removes the cgroup or the box; on Linux the mounts and
// namespaces go with the init. It returns the same result to every
// caller. A frozen session is killed frozen.
func (ss *Session) Close() (Teardown, error) {
	ss.closeOnce.Do(func() {
		ss.end()
		ss.mu.Lock() // an Exec in flight has returned: its processes are dead
		defer ss.mu.Unlock()
		ss.teardown, ss.closeErr = ss.close()
	})
	return ss.teardown, ss.closeErr
}

// Receipt names, per control, the mechanism that enforces it in the
// session, as Close's Teardown will: what each step's result reports.
func (ss *Session) Receipt() map[string]string {
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	r := ss.sb.fullReceipt()
	r["session"] = sessionReceipt
	return r
}

// SetFindings changes the host directory that Close copies the findings
// to ("" discards them): a session's holder learns where findings go only
// when it is stopped. The directory is made (or an empty one taken) now,
// under the rules of Start's (docs/sandbox.md, "Findings"): one that will
// not do is refused here, and the session's findings still go where they
// went before. It fails once Close has begun.
func (ss *Session) SetFindings(dir string) error {
	if dir != "" && !filepath.IsAbs(dir) {
		return errors.New("sandbox: findings directory must be an absolute path")
	}
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	if ss.closing {
		return ErrSessionEnded
	}
	var dst *findings.Dest
	if dir != "" {
		var err error
		if dst, err = openFindings(dir, ss.sb.cfg.ReadWrite); err != nil {
			return err
		}
	}
	if old := ss.sb.dst; old != nil {
		old.Discard()
	}
	ss.sb.dst, ss.sb.cfg.Findings = dst, dir
	return nil
}

// CopyIn copies the host directory dir into the session's workspace, as
// Config.Workspace does at the start, for a session started without one:
// a sandbox built ahead gets its workspace when it is handed out
// (docs/sandbox.md, "Sandboxes built ahead"). It may come only before the
// first step, once. The original is kept for Changes as Config.Workspace's
// is. A failure ends the session (its workspace may be half filled).
func (ss *Session) CopyIn(dir string) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := ss.usable(); err != nil {
		return err
	}
	if ss.steps > 0 || ss.sb.cfg.Workspace != "" || ss.copied {
		return errors.New("sandbox: copy-in: the session has its workspace already, or has run a step")
	}
	ss.copied = true
	if err := ss.copyIn(dir); err != nil {
		ss.end()
		return fmt.Errorf("sandbox: copy-in: %w", err)
	}
	return nil
}

// Changes compares the session's workspace as it is now with the
// workspace as it was copied in (Config.Workspace; an empty tree without
// one) and returns the patch and its manifest, within opt's limits and
// leaving out what its patterns and the original's ignore files exclude
// (package changes; docs/changes.md).
//
// On Linux the original is the workspace stream exactly as the init
// received it, kept since StartSession in a private file (unnamed, mode
// 0600, gone with the session even if airlock is killed), not the host
// directory as it may be by now. The current tree is read from the host
// through the descriptor of the sandbox's /workspace, every path resolved
// beneath it without following a link, a fifo or device never opened,
// within lim. On macOS the original is the box's copy of it, and the
// workspace is read through an os.Root (package macbox).
//
// Changes runs between steps: it waits for a step in flight to end and
// holds the next one back, and a step ends only when every process it
// left is dead, so nothing inside changes the tree while it is read. On
// a frozen session it reads at once: nothing runs. It works on an ended
// session until Close, which discards the workspace. The patch is
// untrusted: airlock never applies it.
func (ss *Session) Changes(opt changes.Options) (changes.Patch, error) {
	return ss.readBetween("changes", func() (changes.Patch, error) { return ss.changes(opt) })
}

// FindingsNow lists what the session's findings directory holds now,
// between steps, as Changes reads the workspace (no link followed,
// within lim): a patch against an empty tree, whose
// manifest names every entry as added, with its size and SHA-256. The
// files are copied out only when the session ends (docs/sandbox.md,
// "Findings").
func (ss *Session) FindingsNow(lim changes.Limits) (changes.Patch, error) {
	return ss.readBetween("findings", func() (changes.Patch, error) { return ss.findingsNow(lim) })
}

// readBetween runs read between steps, or at once on a frozen session
// (nothing runs), and names what it failed to read.
func (ss *Session) readBetween(what string, read func() (changes.Patch, error)) (changes.Patch, error) {
	if ss.frozen.Load() == nil {
		ss.mu.Lock()
		defer ss.mu.Unlock()
	}
	p, err := read()
	if err != nil {
		return p, fmt.Errorf("sandbox: %s: %w", what, err)
	}
	return p, nil
}
