package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// HostProbes returns the probes of this Mac: the open-files limit, the
// system's version, and a run of /usr/bin/true under a profile airlock
// generates.
func HostProbes() Probes {
	exe, _ := os.Executable()
	return Probes{
		OS:                       runtime.GOOS,
		Arch:                     runtime.GOARCH,
		Euid:                     os.Geteuid(),
		Executable:               exe,
		SeccompFilter:            seccomp.Available,
		SeccompFilterDescription: seccomp.Describe(),
		Cgroups:                  limits.Detect,
		Groups:                   idmap.Inspect,
		NoFile: func() (uint64, uint64, error) {
			var r unix.Rlimit
			err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r)
			return r.Cur, r.Max, err
		},
		Kernel:   macVersion(),
		Seatbelt: seatbeltProbe,
	}
}

// macVersion is "macOS 14.5 (Darwin 23.5.0)", or what of it is known.
func macVersion() string {
	product, _ := unix.Sysctl("kern.osproductversion")
	release, _ := unix.Sysctl("kern.osrelease")
	return strings.TrimSpace(fmt.Sprintf("macOS %s (Darwin %s)", product, release))
}

// seatbeltProbe runs /usr/bin/true with sandbox-exec under the profile
// airlock would make for it: the test that Seatbelt takes airlock's
// profiles on this Mac.
func seatbeltProbe(ctx context.Context) error {
	spec, err := seatbelt.Prepare(seatbelt.Input{Program: "/usr/bin/true", SearchPath: []string{"/usr/bin"}})
	if err != nil {
		return err
	}
	profile, err := seatbelt.Profile(spec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/sandbox-exec", "-p", profile, "/usr/bin/true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %q", err, strings.TrimSpace(string(out[:min(len(out), 300)])))
	}
	return nil
}
