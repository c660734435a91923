package limits

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// populated reports whether any process is left in any directory.
func (s *sysGroup) populated() (bool, []int, error) {
	if s.v2 != nil && s.v2.dir != "" {
		pop, err := s.v2.populated()
		if err != nil {
			return false, nil, err
		}
		if pop {
			pids, _ := readPids(s.v2.dir)
			return true, pids, nil
		}
	}
	if s.v1 != nil {
		pids, err := s.v1.procs()
		if err != nil {
			return false, nil, err
		}
		return len(pids) > 0, pids, nil
	}
	return false, nil, nil
}

// killAll kills in rounds until the group is empty: on a hybrid host the
// first round is cgroup.kill alone and later ones add the v1 freezer.
func (s *sysGroup) killAll() error {
	if s.v1 == nil && s.v2 == nil {
		return s.killPlaced()
	}
	deadline := time.Now().Add(killTimeout)
	for round := 0; ; round++ {
		pop, pids, err := s.populated()
		if err != nil {
			return fmt.Errorf("limits: kill: %w", err)
		}
		if !pop {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("limits: kill: group still holds pids %v after %v", pids, killTimeout)
		}
		var errs []error
		if s.v2 != nil && s.v2.dir != "" {
			errs = append(errs, s.v2.kill())
		}
		if s.v1 != nil && (s.v2 == nil || !s.v2.killf || round > 0) {
			errs = append(errs, s.v1.kill())
		}
		if err := errors.Join(errs...); err != nil && round > 0 {
			return fmt.Errorf("limits: kill: %w", err)
		}
		waitFor(roundWait, func() bool {
			pop, _, err := s.populated()
			return err != nil || !pop
		})
	}
}

// killPlaced SIGKILLs the placed processes by pidfd (no pid reuse race)
// and waits until each has exited.
func (s *sysGroup) killPlaced() error {
	fds := s.pidfds
	deadline := time.Now().Add(killTimeout)
	for _, fd := range fds {
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("limits: kill: pidfd_send_signal: %w", err)
		}
	}
	for _, fd := range fds {
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return fmt.Errorf("limits: kill: a placed process is still alive after %v", killTimeout)
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(pfd, int(left/time.Millisecond)+1)
			if err == nil && n > 0 {
				break
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("limits: kill: poll pidfd: %w", err)
			}
		}
	}
	return nil
}

// freezeKill is one kill round under a freezer: it writes freeze to the
// file of dir ("" for none) and waits, at most freezeTimeout, until
// frozen holds; SIGKILLs every process pids lists; and, if the freeze was
// written, writes thaw. A freezer that cannot be written is left out.
func freezeKill(dir, file, freeze, thaw string, frozen func() bool, pids func() ([]int, error)) error {
	fz := dir != "" && writeFile(dir, file, freeze) == nil
	if fz {
		waitFor(freezeTimeout, frozen)
	}
	list, err := pids()
	for _, p := range list {
		_ = unix.Kill(p, unix.SIGKILL) // ESRCH: already gone
	}
	if fz {
		if terr := writeFile(dir, file, thaw); terr != nil && err == nil {
			err = terr
		}
	}
	return err
}
