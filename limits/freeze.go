package limits

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoFreezer is returned by Freeze for a group without a freezer of its
// own: no cgroup.freeze in the unified hierarchy and no v1 freezer
// directory (rootless without delegation, or a host without either).
var ErrNoFreezer = errors.New("limits: the group has no freezer of its own")

// freezeWait bounds Freeze's wait for the kernel to report the group
// frozen.
const freezeWait = 5 * time.Second

// Freeze stops every process of the group where it stands, for the
// suspected-escape procedure: the unified hierarchy's cgroup.freeze where
// the group has a directory there and the write works, else its v1
// freezer. It waits until the kernel reports the group frozen (at most
// five seconds) and returns the mechanism, "cgroup v2 <file>" or
// "cgroup v1 <file>", for the receipt. Only the group's own directories
// are ever frozen, never the caller's. Without a freezer it returns
// ErrNoFreezer and has written nothing.
//
// KillAll and Delete still kill a frozen group (a v1 kill round thaws it
// after the SIGKILLs, and a frozen v2 task dies of SIGKILL); Thaw undoes
// Freeze.
func (g *Group) Freeze() (string, error) {
	g.mu.Lock()
	mech, frozen, err := g.sys.freeze()
	g.mu.Unlock()
	if err != nil {
		return "", err
	}
	var readErr error
	done := waitFor(freezeWait, func() bool {
		ok, err := frozen()
		if err != nil {
			readErr = err
			return true
		}
		return ok
	})
	switch {
	case readErr != nil:
		return "", fmt.Errorf("limits: freeze: %w", readErr)
	case !done:
		return "", fmt.Errorf("limits: freeze: the group did not freeze within %v", freezeWait)
	}
	return mech, nil
}

// Thaw undoes Freeze: it writes the thaw value to the freezer file Freeze
// wrote. It does nothing if the group is not frozen, or no longer exists.
func (g *Group) Thaw() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sys.thaw()
}
