//go:build !linux && !darwin

package doctor

import (
	"context"
	"errors"
)

// errNotLinux is every kernel probe's answer off Linux.
var errNotLinux = errors.New("not Linux")

// hostProbes adds nothing of a system neither Linux nor macOS: none of
// the mechanisms exist, and every probe says so.
func hostProbes(p Probes) Probes {
	p.Spawn = func(context.Context, ...string) error { return errNotLinux }
	p.LandlockABI = func() (int, error) { return 0, errNotLinux }
	p.NoFile = func() (uint64, uint64, error) { return 0, 0, errNotLinux }
	return p
}
