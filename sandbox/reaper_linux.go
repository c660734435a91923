package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the init passes on to the target.
var forwarded = []os.Signal{
	unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT, unix.SIGWINCH,
}

// runTarget executes the target as the init's child in a session of its
// own, forwards signals to it and reaps every zombie of the namespace
// until the target exits. The init then reports and exits, and the
// kernel kills whatever else is left in the pid namespace.
func (s *initState) runTarget(port int) int {
	if err := checkFDs(); err != nil {
		s.fail("fds", err)
		return 1
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	cmd := &exec.Cmd{
		Path:        s.cfg.Path,
		Args:        s.cfg.Args,
		Env:         withProxyEnv(s.cfg.Env, port),
		Dir:         s.cfg.Dir,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := s.applyRlimits(); err != nil {
		s.fail("rlimits", err)
		return 1
	}
	trace("target start")
	if err := cmd.Start(); err != nil {
		s.fail("exec", err)
		return 1
	}
	trace("target started")
	pid := cmd.Process.Pid
	if err := s.c.send(message{Kind: msgStarted, Pid: pid}); err != nil {
		return 1
	}
	go func() {
		for sig := range sigs {
			unix.Kill(pid, sig.(syscall.Signal))
		}
	}()
	st := reap(pid)
	trace("target reaped")
	s.c.send(message{Kind: msgExited, Status: &st})
	return 0
}

// reap waits for children until the target exits, reaping every orphan
// the pid namespace hands to its init on the way.
func reap(target int) exitStatus {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// ECHILD: the target is gone without a status we saw.
			return exitStatus{Code: -1}
		}
		if pid != target {
			continue
		}
		st := exitStatus{
			Code:   -1,
			UserUs: ru.Utime.Nano() / 1000,
			SysUs:  ru.Stime.Nano() / 1000,
			MaxRSS: ru.Maxrss,
		}
		switch {
		case ws.Exited():
			st.Code = ws.ExitStatus()
		case ws.Signaled():
			st.Signal = int(ws.Signal())
		}
		return st
	}
}

// checkFDs verifies that the target will inherit nothing but stdio: every
// other open descriptor of the init is close-on-exec.
func checkFDs() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			continue // the directory listing's own descriptor, now closed
		}
		if flags&unix.FD_CLOEXEC == 0 {
			return fmt.Errorf("descriptor %d would leak into the target", fd)
		}
	}
	return nil
}
