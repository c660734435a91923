package initproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// received is one control packet with the descriptors that came with it.
type received struct {
	m   Message
	fds []int
}

// serveSession is a session's init after the privilege drop: it runs
// steps one at a time, on the parent's request, until the parent kills
// it. Its rlimits are set once, here, and every step inherits them.
func (s *initState) serveSession(port int, fw *forwarder) int {
	if err := s.applyRlimits(); err != nil {
		s.fail("rlimits", err)
		return 1
	}
	var running atomic.Int64 // the step running now, 0 between steps
	msgs := make(chan received)
	go s.readSession(msgs, &running)
	for r := range msgs {
		switch r.m.Kind {
		case MsgProbe:
			CloseAll(r.fds)
			res := s.probes(r.m.Probe)
			if err := s.c.Send(Message{Kind: MsgProbed, Probes: res}); err != nil {
				return 1
			}
		case MsgExec:
			if err := s.runStep(r, port, fw, &running); err != nil {
				return 1
			}
		case MsgCopyIn:
			if err := s.copyIn(r); err != nil {
				s.fail("copy-in", err)
				return 1
			}
			if err := s.c.Send(Message{Kind: MsgCopied}); err != nil {
				return 1
			}
		default:
			CloseAll(r.fds)
			s.fail("protocol", fmt.Errorf("unexpected %q message", r.m.Kind))
			return 1
		}
	}
	return 1 // the parent is gone
}

// readSession reads the control socket for the whole session. A kill is
// acted on here, at once, even while the main thread waits for a step;
// everything else goes to the main thread in order, so a kill for step N
// is always handled before step N+1 can start.
func (s *initState) readSession(out chan<- received, running *atomic.Int64) {
	defer close(out)
	for {
		m, fds, err := s.c.Recv()
		if err != nil {
			return
		}
		if m.Kind == MsgKill {
			CloseAll(fds)
			if m.Step != 0 && running.Load() == int64(m.Step) {
				unix.Kill(-1, unix.SIGKILL) // every process but the init
			}
			continue
		}
		out <- received{m, fds}
	}
}

// runStep executes one step with the received descriptors as its stdin,
// stdout and stderr, waits for it, kills whatever it left behind, and
// reports. A step that cannot start is reported as failed and the session
// goes on; only a broken control socket ends it (the returned error).
func (s *initState) runStep(r received, port int, fw *forwarder, running *atomic.Int64) error {
	step := r.m.Step
	e := r.m.Exec
	if e == nil || step <= 0 || e.Groups < 0 || len(r.fds) != 3+2*e.Groups {
		CloseAll(r.fds)
		return s.c.Send(Message{Kind: MsgFailed, Stage: "exec", Step: step, Error: "malformed exec request"})
	}
	running.Store(int64(step))
	pid, err := s.spawnStep(target{
		path: e.Path, argv: e.Args, env: withProxyEnv(e.Env, port), dir: e.Dir,
		stdio: [3]int{r.fds[0], r.fds[1], r.fds[2]},
	}, r.fds[3:3+e.Groups], r.fds[3+e.Groups:], e.Rlimits)
	CloseAll(r.fds) // the step holds its own copies
	var back *backError
	if errors.As(err, &back) {
		s.fail("cgroup", err)
		return err
	}
	if err != nil {
		running.Store(0)
		return s.c.Send(Message{Kind: MsgFailed, Stage: "exec", Step: step, Error: err.Error()})
	}
	fw.pid.Store(int64(pid))
	if err := s.c.Send(Message{Kind: MsgStarted, Pid: pid, Step: step}); err != nil {
		return err
	}
	st := reap(pid)
	fw.pid.Store(0)
	reapAll()
	running.Store(0)
	if err := s.c.Send(Message{Kind: MsgExited, Status: &st, Step: step}); err != nil {
		return errors.Join(errors.New("report a step's end"), err)
	}
	return nil
}

// copyIn unpacks a workspace stream that comes after the build (a session
// built ahead gets its workspace when it is handed out) into /workspace,
// as buildRoot does with the setup pipe's. It runs after the privilege
// drop, as the uid every step runs as, under Landlock and seccomp; no
// step has run yet. A failure ends the session: /workspace may be half
// filled.
func (s *initState) copyIn(r received) error {
	if len(r.fds) != 1 || s.copied {
		CloseAll(r.fds)
		return errors.New("malformed or repeated copy-in request")
	}
	s.copied = true
	f := os.NewFile(uintptr(r.fds[0]), "airlock-copy-in")
	defer f.Close()
	if err := extractWorkspace(bufio.NewReaderSize(f, 64<<10), WorkspaceDir, s.cfg.TmpfsBytes); err != nil {
		return fmt.Errorf("copy the workspace in: %w", err)
	}
	return nil
}
