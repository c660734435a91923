package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/internal/macbox"
	"golang.org/x/sys/unix"
)

// freezeState marks a frozen session: macOS has no freezer, and Close
// has nothing to undo.
type freezeState struct{}

// sessionReceipt is how a session's caps hold on macOS.
const sessionReceipt = "each step a command of its own in the session's copies, under its own profile; memory and tasks watched per step (nothing runs between steps); disk the session's copies; wall clock and CPU per step"

// Pid returns the current step's process id, airlock's own between
// steps (there is no init on macOS).
func (ss *Session) Pid() int {
	if pid := ss.sb.pid(); pid != 0 {
		return pid
	}
	return os.Getpid()
}

// exec runs step n as a command of its own in the box (Exec); it
// reports whether ctx ended it.
func (ss *Session) exec(ctx context.Context, st Step, caps StepCaps, n int) (Result, bool, error) {
	res := Result{ExitCode: -1}
	if st.Ready != nil {
		if err := st.Ready(); err != nil {
			return res, false, err
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
		return res, false, fmt.Errorf("%w: step %d: %w", ErrStepStart, n, err)
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
		return res, false, fmt.Errorf("%w: %w: step %d: %s", ErrSessionEnded, ErrInitDied, n, res.InitDied)
	}
	return res, ctxDone.Load(), nil
}

// probe runs the start-up probes under a step's profile (Probe).
func (ss *Session) probe(req ProbeRequest) ([]ProbeResult, error) {
	return ss.sb.probe(req), nil
}

// close is Close's teardown: the findings copied out, the box removed.
func (ss *Session) close() (Teardown, error) {
	s := ss.sb
	td := Teardown{Steps: ss.steps, Frozen: ss.frozen.Load() != nil}
	var err error
	ss.fdMu.Lock()
	ss.closing = true
	if s.dst != nil {
		td.FindingsSkipped, err = s.copyOut()
	}
	ss.fdMu.Unlock()
	td.Receipt = s.fullReceipt()
	td.Receipt["session"] = sessionReceipt
	s.teardown()
	return td, err
}

// Freeze stops the session for the suspected-escape procedure: no step
// runs any more, and the current one's processes get SIGSTOP (macOS has
// no freezer: best effort, named so).
func (ss *Session) Freeze() (string, error) {
	ss.frozen.Store(&freezeState{})
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

// copyIn copies dir into the box's workspace (CopyIn).
func (ss *Session) copyIn(dir string) error { return ss.sb.box.CopyIn(dir) }

// changes diffs the box's original with its workspace (Changes).
func (ss *Session) changes(opt changes.Options) (changes.Patch, error) {
	return ss.sb.box.Changes(opt)
}

// findingsNow diffs an empty tree with the box's findings (FindingsNow).
func (ss *Session) findingsNow(lim changes.Limits) (changes.Patch, error) {
	return ss.sb.box.FindingsNow(lim)
}
