package holder

import (
	"errors"
	"fmt"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/limits"
)

// Where this process finds its own binary and descriptors, and the
// longest path a unix socket may have (108 bytes with its NUL).
const (
	fdDir         = "/proc/self/fd"
	maxSocketPath = 107
)

func selfExe() string { return "/proc/self/exe" }

// tornDown is how a dead holder's session ended, for the audit record.
const tornDown = "its sandbox died with it, and the watchdog removed its cgroups, probe canary and socket"

// becomeReaper makes the watchdog a child subreaper: the holder's orphans
// (its sandbox's init) become its own, to reap.
func becomeReaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("subreaper: %w", err)
	}
	return nil
}

// waitHolder waits for the holder, then for the orphans it left.
func waitHolder(cmd *exec.Cmd) {
	cmd.Wait()
	reapOrphans(5 * time.Second)
}

// sweepSandboxes removes the dead holder's cgroups (every dead airlock's:
// their owners' locks tell them apart).
func sweepSandboxes(int, []string) { limits.SweepStale() }

// reapOrphans waits for the children the holder left to this subreaper
// (its sandbox's init, killed by its parent-death signal), for at most d.
func reapOrphans(d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return
		case err == nil && pid > 0:
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
}
