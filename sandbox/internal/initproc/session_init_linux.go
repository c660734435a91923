package initproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"

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
//
// The main thread reads the control socket itself, with a blocking
// recvmsg, and waits for a step on its pidfd and the socket together
// (waitStep): no other thread stands between a request and the init's
// answer. With one processor, a message handed from a reading goroutine
// to the locked main thread waited for the runtime's monitor to take the
// reader's processor back, 165 µs a step at the median here.
func (s *initState) serveSession(port int, fw *forwarder) int {
	if err := s.applyRlimits(); err != nil {
		s.fail("rlimits", err)
		return 1
	}
	for {
		m, fds, err := s.c.Recv()
		if err != nil {
			return 1 // the parent is gone
		}
		r := received{m, fds}
		switch m.Kind {
		case MsgKill:
			CloseAll(fds) // for a step that has ended: nothing runs
		case MsgProbe:
			CloseAll(fds)
			res := s.probes(m.Probe)
			if err := s.c.Send(Message{Kind: MsgProbed, Probes: res}); err != nil {
				return 1
			}
		case MsgExec:
			if err := s.runStep(r, port, fw); err != nil {
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
			CloseAll(fds)
			s.fail("protocol", fmt.Errorf("unexpected %q message", m.Kind))
			return 1
		}
	}
}

// runStep executes one step with the received descriptors as its stdin,
// stdout and stderr, waits for it, kills whatever it left behind, and
// reports. A step that cannot start is reported as failed and the session
// goes on; only a broken control socket ends it (the returned error).
func (s *initState) runStep(r received, port int, fw *forwarder) error {
	step := r.m.Step
	e := r.m.Exec
	if e == nil || step <= 0 || e.Groups < 0 || len(r.fds) != 3+2*e.Groups {
		CloseAll(r.fds)
		return s.c.Send(Message{Kind: MsgFailed, Stage: "exec", Step: step, Error: "malformed exec request"})
	}
	path, err := programPath(e.Tree, e.Path)
	if err != nil {
		CloseAll(r.fds)
		return s.c.Send(Message{Kind: MsgFailed, Stage: "exec", Step: step, Error: err.Error()})
	}
	pid, err := s.spawnStep(target{
		path: path, argv: e.Args, env: proxyEnv(e.Env, port, ""), dir: e.Dir,
		stdio: [3]int{r.fds[0], r.fds[1], r.fds[2]},
	}, r.fds[3:3+e.Groups], r.fds[3+e.Groups:], e.Rlimits)
	CloseAll(r.fds) // the step holds its own copies
	var back *backError
	if errors.As(err, &back) {
		s.fail("cgroup", err)
		return err
	}
	if err != nil {
		return s.c.Send(Message{Kind: MsgFailed, Stage: "exec", Step: step, Error: err.Error()})
	}
	fw.pid.Store(int64(pid))
	if err := s.c.Send(Message{Kind: MsgStarted, Pid: pid, Path: path, Step: step}); err != nil {
		return err
	}
	st, err := s.waitStep(pid, step)
	fw.pid.Store(0)
	reapAll()
	if err != nil {
		return err
	}
	if err := s.c.Send(Message{Kind: MsgExited, Status: &st, Step: step}); err != nil {
		return errors.Join(errors.New("report a step's end"), err)
	}
	return nil
}

// orphanPoll is how often waitStep reaps, at the latest, the orphans the
// pid namespace hands to the init while a step runs, and noPidfdPoll how
// often it looks for the step's exit where pidfd_open is refused. An
// orphan's exit is mostly seen at once all the same: its SIGCHLD goes to
// the init's main thread first (the kernel's choice for a process-wide
// signal that thread does not block), which ends its poll with EINTR.
const (
	orphanPoll  = 10 // ms
	noPidfdPoll = 1  // ms
)

// waitStep waits for the step's process to exit, reaping every orphan
// meanwhile, and kills every process but the init at once when the parent
// asks to kill this step. A kill for an earlier step is ignored; any other
// message, or the parent gone, is an error that ends the session.
func (s *initState) waitStep(pid, step int) (ExitStatus, error) {
	fds := []unix.PollFd{{Fd: int32(s.c.fd), Events: unix.POLLIN}}
	every := noPidfdPoll
	// The step is the init's child, not yet reaped: its pid cannot name
	// another process before reapUntil collects it.
	if pidfd, err := unix.PidfdOpen(pid, 0); err == nil {
		defer unix.Close(pidfd)
		fds = append(fds, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
		every = orphanPoll
	}
	for {
		if st, done := reapUntil(pid, unix.WNOHANG); done {
			return st, nil
		}
		n, err := unix.Poll(fds, every)
		switch {
		case errors.Is(err, unix.EINTR), err == nil && (n == 0 || fds[0].Revents == 0):
			continue // a signal (an orphan's SIGCHLD), the orphans' time, the step's exit
		case err != nil:
			return ExitStatus{}, fmt.Errorf("wait for step %d: poll: %w", step, err)
		}
		m, mfds, err := s.c.Recv()
		CloseAll(mfds)
		switch {
		case err != nil:
			return ExitStatus{}, err
		case m.Kind == MsgKill && m.Step == step:
			unix.Kill(-1, unix.SIGKILL) // every process but the init
		case m.Kind != MsgKill:
			s.fail("protocol", fmt.Errorf("unexpected %q message while step %d runs", m.Kind, step))
			return ExitStatus{}, errors.New("protocol")
		}
	}
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
