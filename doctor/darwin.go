package doctor

import (
	"context"
	"fmt"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// darwin reports airlock's controls on macOS: Seatbelt and the watch
// where Linux has namespaces, cgroups, seccomp and Landlock (package
// seatbelt's table, docs/sandbox.md "macOS"), each as strong as the Mac
// makes it, checked against what the probes find: a Seatbelt that
// refuses a profile leaves every control missing, and a run as root is
// refused.
func darwin(ctx context.Context, p Probes) []Control {
	var out []Control
	sbErr := p.Seatbelt(ctx)
	for _, c := range seatbelt.Controls() {
		ctl := Control{Name: c.Name, Mechanism: c.Mechanism, Strength: Strength(c.Strength), Detail: c.Detail}
		switch {
		case sbErr != nil:
			ctl.Strength = Missing
			ctl.Detail = fmt.Sprintf("sandbox-exec could not run a generated profile (%v): airlock run refuses on this Mac", sbErr)
			ctl.Fix = "check that /usr/bin/sandbox-exec exists and runs (macOS ships it); see docs/sandbox.md, \"macOS\""
		case c.Name == RequirePrivileges && p.Euid == 0:
			ctl.Strength = Missing
			ctl.Detail = "airlock runs commands on macOS as the calling user, and refuses to run them as root"
			ctl.Fix = "run airlock as an ordinary user"
		case c.Name == RequirePrivileges:
			ctl.Mechanism = fmt.Sprintf("the calling user (uid %d)", p.Euid)
		case c.Name == RequireOpenFiles:
			ctl = openFiles(p)
		}
		out = append(out, ctl)
	}
	return out
}
