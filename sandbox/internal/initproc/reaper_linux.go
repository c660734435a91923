package initproc

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the init passes on to the target.
var forwarded = []os.Signal{
	unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT, unix.SIGWINCH,
}

// crashSignals are the signals for which the Go runtime keeps its own
// handler whatever os/signal asks, and which it turns into a crash (a
// throw, or a panic at whatever the init was running) when they come
// with a si_code other than SI_USER or SI_TKILL: from rt_sigqueueinfo,
// pidfd_send_signal with a siginfo, or a file's F_SETSIG signal with
// the init as its owner. The init puts them back to SIG_DFL, which the
// kernel never delivers to a pid namespace's init from inside it
// (docs/sandbox.md, "Signals to the init"). A real fault of the init
// still kills it (the kernel forces a fault's signal), and the parent
// reports that as an integrity failure. The target inherits SIG_DFL, as
// from any parent.
var crashSignals = []unix.Signal{
	unix.SIGILL, unix.SIGTRAP, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSTKFLT, unix.SIGSYS,
}

// harmfulUnlessNotified are the signals, besides the forwarded ones and
// the crash signals, that would end or stop the init when nothing asked
// for them with os/signal: SIGABRT, which the Go runtime turns into a
// crash, and the stop signals it leaves at SIG_DFL (which the kernel
// ignores only when they come from inside). Every other signal the runtime
// handles it ignores when nobody asked. Each signal os/signal enables
// costs a round trip between two threads (the runtime's mask updater),
// some 20 µs here: asking for these few rather than for all 64 keeps more
// than a millisecond off every run.
var harmfulUnlessNotified = []os.Signal{unix.SIGABRT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU}

// forwarder passes the forwarded signals the init receives to the current
// target (or step), if any.
type forwarder struct {
	pid atomic.Int64
}

// startForwarding makes every signal harmless to the init and starts the
// goroutine that forwards the forwarded ones: the crash signals go back
// to SIG_DFL, the forwarded ones and those that would end or stop the
// init are taken by os/signal (delivered to a channel, whatever its
// si_code), and the runtime ignores the rest, so nothing a process inside
// sends — kill(1, SIGABRT), SIGQUIT, SIGSEGV — crashes, stops or ends the
// init. The init calls it once, while it builds the sandbox, so that
// none of this is on the path to the target's exec.
func startForwarding() *forwarder {
	for _, sig := range crashSignals {
		setDefault(sig)
	}
	f := &forwarder{}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append(slices.Clip(forwarded), harmfulUnlessNotified...)...)
	go func() {
		for sig := range sigs {
			if pid := int(f.pid.Load()); pid > 0 && slices.Contains(forwarded, sig) {
				unix.Kill(pid, sig.(syscall.Signal))
			}
		}
	}()
	return f
}

// setDefault sets sig's disposition to SIG_DFL with rt_sigaction(2),
// behind the Go runtime's back: os/signal has no way to do it for the
// signals the runtime keeps (signal.Reset reinstalls its handler). A
// zeroed struct sigaction is SIG_DFL, no flags, an empty mask, on every
// architecture; 8 is the size of the kernel's sigset_t.
func setDefault(sig unix.Signal) {
	var sa [4]uint64
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa[0])), 0, 8, 0, 0)
}

// target is what the init executes: a path, its argv and environment,
// its working directory, and its standard streams (descriptors of the
// init: its own stdio for a single run, received pipes for a step).
type target struct {
	path  string
	argv  []string
	env   []string
	dir   string
	stdio [3]int
}

// spawn forks and executes t from the calling thread — the init's locked
// main thread, the only one that carries the Landlock domain — in a
// session of its own. syscall.ForkExec rather than os/exec: the init needs
// none of exec.Cmd's plumbing, and os.StartProcess would first fork a
// throwaway child to learn whether pidfds work, on every run.
func spawn(t target) (int, error) {
	files := []uintptr{uintptr(t.stdio[0]), uintptr(t.stdio[1]), uintptr(t.stdio[2])}
	pid, err := syscall.ForkExec(t.path, t.argv, &syscall.ProcAttr{
		Dir:   t.dir,
		Env:   t.env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.path, err)
	}
	return pid, nil
}

// runTarget executes the single run's target as the init's child,
// forwards signals to it and reaps every zombie of the namespace until the
// target exits. The init then reports and exits, and the kernel kills
// whatever else is left in the pid namespace.
func (s *initState) runTarget(t target, fw *forwarder) int {
	if err := s.applyRlimits(); err != nil {
		s.fail("rlimits", err)
		return 1
	}
	path, err := programPath(s.cfg.Tree, t.path)
	if err != nil {
		s.fail("exec", err)
		return 1
	}
	t.path = path
	pid, err := s.spawnVictim(t)
	if err != nil {
		s.fail("exec", err)
		return 1
	}
	fw.pid.Store(int64(pid))
	if s.hole != nil && s.hole.Forked != nil {
		s.hole.Forked()
	}
	if err := s.c.Send(Message{Kind: MsgStarted, Pid: pid, Path: path}); err != nil {
		return 1
	}
	st := reap(pid)
	s.c.Send(Message{Kind: MsgExited, Status: &st})
	return 0
}

// reap waits for children until the target exits, reaping every orphan
// the pid namespace hands to its init on the way.
func reap(target int) ExitStatus {
	st, _ := reapUntil(target, 0)
	return st
}

// reapUntil reaps children, with wait4's options (0 or WNOHANG), until
// the target is among them: its status and true. With WNOHANG it returns
// false once no child has exited. ECHILD means the target is gone without
// a status seen: code -1, and true.
func reapUntil(target, options int) (ExitStatus, bool) {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, options, &ru)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return ExitStatus{Code: -1}, true
		case pid == 0:
			return ExitStatus{}, false // WNOHANG, and none has exited
		case pid != target:
			continue
		}
		st := ExitStatus{
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
		return st, true
	}
}

// reapAll kills every process of the namespace but the init (kill(-1)
// from a pid namespace's init spares only the init) and reaps them all.
// An init without children has nothing to kill: every other process of
// its namespace descends from it, and one whose parent died is its child
// (kill(-1) walks every process of the host to find none).
func reapAll() {
	var ws unix.WaitStatus
	if _, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); errors.Is(err, unix.ECHILD) {
		return
	}
	unix.Kill(-1, unix.SIGKILL)
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: nothing is left
		}
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
		fd := Atoi(e.Name())
		if fd <= 2 {
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
