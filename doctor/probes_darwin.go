package doctor

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// hostProbes adds the Mac's probes to p: the open-files limit, the
// system's version, and a run of /usr/bin/true under a profile airlock
// generates.
func hostProbes(p Probes) Probes {
	p.NoFile = noFile
	p.Kernel = macVersion()
	p.Seatbelt = seatbeltProbe
	return p
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
