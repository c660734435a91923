package initproc

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// backError is a spawnStep that could not move the init back into the
// session's group: the init would sit in the step's, so the session ends.
type backError struct{ err error }

func (e *backError) Error() string { return "move back into the session's group: " + e.err.Error() }
func (e *backError) Unwrap() error { return e.err }

// spawnStep forks a session's step inside the step's own cgroup, with
// no moment where it runs outside: the init's main thread writes "0" to
// each of the step group's v1 tasks files (enter), which moves that one
// thread (the kernel's cheap path: no cgroup.procs write, no global
// lock), forks the step there — a child starts in its forking thread's
// cgroups — and writes "0" to the session group's (back). The files were
// opened by the parent on the host; the kernel checks the opener's
// credentials.
//
// rl are the rlimits that stand in for the caps no cgroup holds. The
// step starts under rl's soft RLIMIT_NPROC (the init lowers its own soft
// limit for the fork), and gets all of rl, soft and hard, by prlimit as
// soon as it has started; until then the session's hard limits hold.
// RLIMIT_DATA is not lowered on the init so: its own mappings (the Go
// heap, the race detector's shadow) may exceed a step's cap, and an init
// that cannot map memory dies. A step that cannot be placed or limited is
// killed and reported as not started; an init that cannot move back
// returns a *backError.
func (s *initState) spawnStep(t target, enter, back []int, rl []Rlimit) (int, error) {
	lims := make([]unix.Rlimit, len(rl))
	for i, r := range rl {
		lims[i] = stepRlimit(r)
	}
	if err := moveSelf(enter); err != nil {
		if berr := moveSelf(back); berr != nil {
			return 0, &backError{berr}
		}
		return 0, fmt.Errorf("enter the step's group: %w", err)
	}
	restore := softNproc(rl, lims)
	pid, err := s.spawnVictim(t)
	restore()
	if berr := moveSelf(back); berr != nil {
		if err == nil {
			unix.Kill(pid, unix.SIGKILL)
		}
		return 0, &backError{berr}
	}
	if err != nil {
		return 0, err
	}
	for i, r := range rl {
		if err := unix.Prlimit(pid, r.Resource, &lims[i], nil); err != nil {
			unix.Kill(pid, unix.SIGKILL)
			reap(pid)
			return 0, fmt.Errorf("prlimit %s on the step: %w", r.Name, err)
		}
	}
	return pid, nil
}

// stepRlimit is r for a step: never above the session's (the init's
// hard limit), and RLIMIT_NPROC on top of the init's threads, which the
// kernel counts with the step's (the same uid's).
func stepRlimit(r Rlimit) unix.Rlimit {
	lim := unix.Rlimit{Cur: r.Cur, Max: r.Max}
	if r.Resource == unix.RLIMIT_NPROC {
		n := uint64(ownThreads())
		lim.Cur, lim.Max = lim.Cur+n, lim.Max+n
	}
	var own unix.Rlimit
	if unix.Getrlimit(r.Resource, &own) == nil {
		lim.Cur, lim.Max = min(lim.Cur, own.Max), min(lim.Max, own.Max)
	}
	return lim
}

// softNproc lowers the init's own soft RLIMIT_NPROC to the step's (lims
// are rl's for the step), when rl has one, and returns the restore. The
// init keeps room for the threads it has and the step's count more.
func softNproc(rl []Rlimit, lims []unix.Rlimit) func() {
	for i, r := range rl {
		if r.Resource != unix.RLIMIT_NPROC {
			continue
		}
		var own unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NPROC, &own) != nil {
			return func() {}
		}
		lowered := unix.Rlimit{Cur: min(lims[i].Cur, own.Cur), Max: own.Max}
		if unix.Setrlimit(unix.RLIMIT_NPROC, &lowered) != nil {
			return func() {}
		}
		return func() { unix.Setrlimit(unix.RLIMIT_NPROC, &own) }
	}
	return func() {}
}

// moveSelf writes "0" to each tasks descriptor from the main thread (see
// placeSelf), keeping the descriptors open.
func moveSelf(fds []int) error {
	if len(fds) == 0 {
		return nil
	}
	if unix.Gettid() != unix.Getpid() {
		return fmt.Errorf("running on thread %d, not the leader", unix.Gettid())
	}
	for _, fd := range fds {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return err
		}
	}
	return nil
}

// ownThreads is the init's thread count (/proc/self/status), 0 when
// unknown: the step then gets less than its cap, never more.
func ownThreads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
