package approval

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// deciderAttr puts the decider in a process group of its own, killed
// with airlock (its parent-death signal).
func deciderAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// exitOf is closed when the child pid has exited, without reaping it
// (waitid's WNOWAIT): its id, and its group's, stay its own until then.
func exitOf(pid int) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		close(exited)
	}()
	return exited
}
