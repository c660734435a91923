package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/internal/macbox"
	"golang.org/x/sys/unix"
)

// Session is one sandbox that runs several commands, one after another
// (StartSession): on macOS, one box whose copies live from step to step,
// each step a command of its own under its own profile. Exec, Freeze,
// Evidence and Close are safe for concurrent use; Execs run one at a
// time.
type Session struct {
	sb *Sandbox

	mu     sync.Mutex // held by Exec for a whole step, and by Close
	fdMu   sync.Mutex // held by SetFindings and by Close's copy-out (the findings destination)
	steps  int
	ended  atomic.Bool
	frozen atomic.Bool
	copied bool // under mu
	// closing is set under fdMu when Close's copy-out begins.
	closing bool

	closeOnce sync.Once
	teardown  Teardown
	closeErr  error
}

// sessionReceipt is how a session's caps hold on macOS.
const sessionReceipt = "each step a command of its own in the session's copies, under its own profile; memory and tasks watched per step (nothing runs between steps); disk the session's copies; wall clock and CPU per step"

// StartSession builds one sandbox as Start does, with the start-up
// probes once, but runs no command: each Exec then runs one step in it,
// until Close. cfg.Path, Args, Env, Dir and the streams must be empty.
// Memory and tasks are watched per step: every process of a step is
// killed when it ends, so nothing of the session runs between steps.
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
	sb.mu.Lock()
	sb.released = true // a session runs steps, never a Release
	sb.mu.Unlock()
	return &Session{sb: sb}, nil
}

// Listener returns the proxy's listener, nil unless Config.Proxy.
func (ss *Session) Listener() net.Listener { return ss.sb.lis }

// Pid returns the current step's process id, airlock's own between
// steps (there is no init on macOS).
func (ss *Session) Pid() int {
	if pid := ss.sb.pid(); pid != 0 {
		return pid
	}
	return os.Getpid()
}

// usable says why no step may start now, if so.
func (ss *Session) usable() error {
	switch {
	case ss.frozen.Load():
		return ErrFrozen
	case ss.ended.Load():
		return ErrSessionEnded
	}
	return nil
}

// Exec runs one step and waits for it and every process it left: its
// result, or an error when it could not run (ErrStepStart: the session
// goes on; ErrSessionEnded or ErrFrozen: it does not). When ctx is done
// the step is killed (for a Terminated cause, signalled first) and Exec
// returns its result with ctx's error.
func (ss *Session) Exec(ctx context.Context, st Step) (Result, error) {
	res := Result{ExitCode: -1}
	if err := ss.usable(); err != nil {
		return res, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := ss.usable(); err != nil {
		return res, err
	}
	st, caps, err := normalizeStep(st, ss.sb.cfg.Caps)
	if err != nil {
		return res, err
	}
	ss.steps++
	n := ss.steps
	if st.Ready != nil {
		if err := st.Ready(); err != nil {
			return res, err
		}
	}
	s := ss.sb
	cmd := s.command(st.Path, st.Tree, st.Args, st.Env, st.Dir, st.Stdin, st.Stdout, st.Stderr, caps.OutputBytes,
		macbox.Caps{Wall: caps.Wall, CPU: caps.CPU, MemoryBytes: caps.MemoryBytes, Tasks: caps.Tasks})
	s.mu.Lock()
	s.pending = ""
	run, err := s.box.Start(cmd)
	if err == nil {
		s.run = run
	}
	s.mu.Unlock()
	if err != nil {
		return res, fmt.Errorf("%w: step %d: %w", ErrStepStart, n, err)
	}
	var ctxDone atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		ctxDone.Store(true)
		if t := TerminationOf(ctx); t != nil && run.Signal(t.Signal) == nil {
			time.AfterFunc(t.Grace, func() { run.Kill("") })
			return
		}
		run.Kill("")
	})
	o := run.Wait()
	stop()
	s.mu.Lock()
	s.run = nil
	s.mu.Unlock()
	res = outcome(o, caps.CPU)
	res.Path = s.box.Name(run.Program)
	res.Receipt = s.receipt(run)
	res.Receipt["session"] = sessionReceipt
	if res.InitDied != "" {
		ss.end()
		return res, fmt.Errorf("%w: %w: step %d: %s", ErrSessionEnded, ErrInitDied, n, res.InitDied)
	}
	if res.KilledBy != "" && st.EndSessionOnKill {
		ss.end()
	}
	if ctxDone.Load() {
		return res, ctx.Err()
	}
	return res, nil
}

// Probe runs the start-up probes again, between steps, under a step's
// profile.
func (ss *Session) Probe(req ProbeRequest) ([]ProbeResult, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := ss.usable(); err != nil {
		return nil, err
	}
	return ss.sb.probe(req), nil
}

// end kills whatever runs; Exec then fails with ErrSessionEnded.
func (ss *Session) end() {
	ss.ended.Store(true)
	ss.sb.kill("")
}

// Close ends the session: it kills every process, copies the findings
// out to Config.Findings, closes the listener and removes the box. It
// returns the same result to every caller.
func (ss *Session) Close() (Teardown, error) {
	ss.closeOnce.Do(func() {
		ss.end()
		ss.mu.Lock() // an Exec in flight has returned
		defer ss.mu.Unlock()
		s := ss.sb
		td := Teardown{Steps: ss.steps, Frozen: ss.frozen.Load()}
		var err error
		ss.fdMu.Lock()
		ss.closing = true
		if s.dst != nil {
			td.FindingsSkipped, err = s.copyOut()
		}
		ss.fdMu.Unlock()
		td.Receipt = s.receipt(nil)
		td.Receipt["session"] = sessionReceipt
		s.teardown()
		ss.teardown, ss.closeErr = td, err
	})
	return ss.teardown, ss.closeErr
}

// Freeze stops the session for the suspected-escape procedure: no step
// runs any more, and the current one's processes get SIGSTOP (macOS has
// no freezer: best effort, named so).
func (ss *Session) Freeze() (string, error) {
	ss.frozen.Store(true)
	if err := ss.sb.signal(syscall.SIGSTOP); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return "", fmt.Errorf("sandbox: freeze: %w", err)
	}
	return "SIGSTOP to the current step's process group (macOS has no freezer); no further step runs", nil
}

// Evidence writes what can be kept of the session into dir: the
// session's receipt and a copy of the workspace as it is.
func (ss *Session) Evidence(dir string) (evidence.Record, error) {
	ev := evidence.Record{Dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ev, fmt.Errorf("sandbox: evidence: %w", err)
	}
	var lines []string
	for k, v := range ss.Receipt() {
		lines = append(lines, k+": "+v)
	}
	if err := os.WriteFile(filepath.Join(dir, "receipt.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		ev.Errors = append(ev.Errors, "receipt: "+err.Error())
	} else {
		ev.Files = append(ev.Files, "receipt.txt")
	}
	src, err := openDir(ss.sb.box.Workspace)
	if err != nil {
		ev.Errors = append(ev.Errors, "workspace: "+err.Error())
		return ev, nil
	}
	defer unix.Close(src)
	ev.WorkspaceSkipped, err = findings.CopyTree(src, filepath.Join(dir, "workspace"), ss.sb.cfg.Caps.DiskWriteBytes)
	ev.Files = append(ev.Files, "workspace")
	if err != nil {
		ev.Errors = append(ev.Errors, "workspace: "+err.Error())
	}
	return ev, nil
}

// Receipt names, per control, the mechanism that enforces it.
func (ss *Session) Receipt() map[string]string {
	r := ss.sb.receipt(nil)
	r["session"] = sessionReceipt
	return r
}

// SetFindings changes the host directory that Close copies the findings
// to ("" discards them), under Start's rules: one that will not do is
// refused here, and the findings still go where they went before. It
// fails once Close has begun.
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

// CopyIn copies the host directory dir into the workspace, for a
// session started without one, before its first step, once.
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
	if err := ss.sb.box.CopyIn(dir); err != nil {
		ss.end()
		return fmt.Errorf("sandbox: copy-in: %w", err)
	}
	return nil
}

// Changes compares the workspace with the workspace as copied in
// (package changes), under opt, between steps; the patch is untrusted.
func (ss *Session) Changes(opt changes.Options) (changes.Patch, error) {
	if !ss.frozen.Load() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
	}
	p, err := ss.sb.box.Changes(opt)
	if err != nil {
		return p, fmt.Errorf("sandbox: changes: %w", err)
	}
	return p, nil
}

// FindingsNow lists what the findings directory holds now, between
// steps, as a patch against an empty tree.
func (ss *Session) FindingsNow(lim changes.Limits) (changes.Patch, error) {
	if !ss.frozen.Load() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
	}
	p, err := ss.sb.box.FindingsNow(lim)
	if err != nil {
		return p, fmt.Errorf("sandbox: findings: %w", err)
	}
	return p, nil
}
