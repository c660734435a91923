package approval

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// deciderAttr puts the decider in a process group of its own. macOS has
// no parent-death signal: a decider outlives an airlock killed while it
// runs, until it ends by itself (docs/approvals.md).
func deciderAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// exitOf is closed when the child pid has exited, without reaping it
// (kqueue's NOTE_EXIT): its id, and its group's, stay its own until then.
// A child already dead when it is asked (ESRCH) has exited.
func exitOf(pid int) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		kq, err := unix.Kqueue()
		if err != nil {
			return
		}
		defer unix.Close(kq)
		ev := []unix.Kevent_t{{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD, Fflags: unix.NOTE_EXIT}}
		if _, err := unix.Kevent(kq, ev, nil, nil); err != nil {
			return
		}
		var got [1]unix.Kevent_t
		for {
			n, err := unix.Kevent(kq, nil, got[:], nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n > 0 {
				return
			}
		}
	}()
	return exited
}
