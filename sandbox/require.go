package sandbox

import (
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/limits"
)

// The require names the sandbox answers itself; the cgroup ones are the
// limits package's (limits.RequireNames).
const (
	RequireUserNS      = "userns"
	RequireSeccomp     = "seccomp"
	RequireLandlock    = "landlock"
	RequireLandlockNet = "landlock-net"
)

// RequireNames lists every require name a Config may carry.
func RequireNames() []string {
	return append([]string{RequireUserNS, RequireSeccomp, RequireLandlock, RequireLandlockNet}, limits.RequireNames...)
}

// needs are the requirements the init must enforce rather than skip.
type needs struct {
	landlock, seccomp bool
}

// checkRequire fails closed: a name the host cannot provide is an
// ErrRequirement, and a name nobody knows is an error of its own (a typo
// must not drop a requirement).
func checkRequire(require []string) (needs, error) {
	var n needs
	missing := &RequirementError{Why: map[string]string{}}
	for _, r := range require {
		if !slices.Contains(RequireNames(), r) {
			return n, fmt.Errorf("sandbox: require %q: unknown mechanism (known: %s)", r, strings.Join(RequireNames(), ", "))
		}
		if ok, why := hostProvides(r); !ok {
			missing.Missing = append(missing.Missing, r)
			missing.Why[r] = why
		}
		switch r {
		case RequireLandlock, RequireLandlockNet:
			n.landlock = true
		case RequireSeccomp:
			n.seccomp = true
		}
	}
	if len(missing.Missing) > 0 {
		return n, missing
	}
	return n, nil
}
