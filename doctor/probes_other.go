//go:build !linux && !darwin

package doctor

import (
	"context"
	"errors"
	"os"
	"runtime"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// errNotLinux is every kernel probe's answer off Linux.
var errNotLinux = errors.New("not Linux")

// HostProbes returns the probes of the real host: on a system neither
// Linux nor macOS, none of the mechanisms exist, and every probe says so.
func HostProbes() Probes {
	exe, _ := os.Executable()
	return Probes{
		OS:                       runtime.GOOS,
		Arch:                     runtime.GOARCH,
		Euid:                     os.Geteuid(),
		Executable:               exe,
		Spawn:                    func(context.Context, ...string) error { return errNotLinux },
		LandlockABI:              func() (int, error) { return 0, errNotLinux },
		SeccompFilter:            seccomp.Available,
		SeccompFilterDescription: seccomp.Describe(),
		Cgroups:                  limits.Detect,
		Groups:                   idmap.Inspect,
		NoFile:                   func() (uint64, uint64, error) { return 0, 0, errNotLinux },
	}
}
