//go:build !linux

package limits

import (
	"errors"
	"fmt"
	"os"
)

// errNotLinux is what every operation returns off Linux: the caps are
// enforced by Linux cgroups and rlimits, and nothing here pretends to.
var errNotLinux = fmt.Errorf("limits: resource caps are enforced on Linux only: %w", errors.ErrUnsupported)

// sysGroup is empty off Linux; New never returns a Group there.
type sysGroup struct{}

func newGroup(Caps, Options, *layout) (*Group, error) { return nil, errNotLinux }

func (sysGroup) place(int) error       { return errNotLinux }
func (sysGroup) dirFD() (int, bool)    { return -1, false }
func (sysGroup) killAll() error        { return errNotLinux }
func (sysGroup) stats() (Stats, error) { return Stats{}, errNotLinux }
func (sysGroup) remove() error         { return errNotLinux }
func (sysGroup) counters() counters    { return counters{} }
func (sysGroup) groupDirs() GroupDirs  { return GroupDirs{} }
func (sysGroup) thaw() error           { return nil }

func (sysGroup) freeze() (string, func() (bool, error), error) { return "", nil, errNotLinux }

// Detect reports that this platform has no cgroups.
func Detect() HostInfo {
	return HostInfo{Mode: ModeNone, Euid: os.Geteuid(), Notes: []string{"not Linux: no cgroups"}}
}

// SweepStale has nothing to sweep off Linux.
func SweepStale() {}

// sysChild is empty off Linux; NewChild never returns a Child there.
type sysChild struct{}

// NewChild refuses off Linux.
func (g *Group) NewChild(string) (*Child, error) { return nil, errNotLinux }

// Limit refuses off Linux.
func (c *Child) Limit(ChildCaps) error { return errNotLinux }

// Dirs has nothing off Linux.
func (c *Child) Dirs() (child, parent map[string]string) { return nil, nil }

// Stats has nothing off Linux.
func (c *Child) Stats() Stats { return Stats{} }

// Delete refuses off Linux.
func (c *Child) Delete() error { return errNotLinux }
