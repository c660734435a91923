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
	requireUserNS      = "userns"
	requireSeccomp     = "seccomp"
	requireLandlock    = "landlock"
	requireLandlockNet = "landlock-net"
)

// The require names that every sandbox meets by construction: Start
// creates these namespaces, pivots its root and sets no_new_privs, or
// fails (but for requireNetNS: see requireProcFS). requireLandlockScope
// needs Landlock ABI 6; requireEgressProxy is met when Config.Proxy is
// set.
const (
	requirePIDNS         = "pidns"
	requireMountNS       = "mountns"
	requireNetNS         = "netns"
	requireIPCNS         = "ipcns"
	requireUTSNS         = "utsns"
	requireCgroupNS      = "cgroupns"
	requirePivotRoot     = "pivot-root"
	requireNoNewPrivs    = "no-new-privs"
	requireLandlockScope = "landlock-scope"
	requireEgressProxy   = "egress-proxy"
	// requirePrivileges: the command runs as uid 65534 with no
	// capabilities and no supplementary groups (a rootless run that
	// cannot drop them is refused); requireOpenFiles: RLIMIT_NOFILE is
	// set to the openFiles cap on every run.
	requirePrivileges = "privileges"
	requireOpenFiles  = "open-files"
)

// requireProcFS is met where the sandbox gets a /proc of its own pid
// namespace; a host that refuses a fresh one (a container) gives it the
// host's instead, unless the policy requires this (docs/sandbox.md,
// "Inside a container"). requireNetNS, once met by construction, is now
// met only where the host lets the sandbox make a network namespace.
const requireProcFS = "procfs"

// RequireNames lists every require name a Config may carry: the doctor
// package's list, which a test keeps equal to it.
func RequireNames() []string {
	return append([]string{requireUserNS, requirePIDNS, requireMountNS, requireNetNS, requireIPCNS, requireUTSNS,
		requireCgroupNS, requirePivotRoot, requireNoNewPrivs, requireSeccomp, requireLandlock, requireLandlockNet,
		requireLandlockScope, requireEgressProxy, requirePrivileges, requireOpenFiles, requireProcFS}, limits.RequireNames...)
}

// needs are the requirements the init (or the start of it) must enforce
// rather than skip or work around.
type needs struct {
	landlock, seccomp, netns, procfs, egress bool
}

// checkRequire fails closed: a name the host cannot provide is an
// ErrRequirement, and a name nobody knows is an error of its own (a typo
// must not drop a requirement).
func checkRequire(require []string, proxy bool) (needs, error) {
	var n needs
	missing := &requirementError{Why: map[string]string{}}
	for _, r := range require {
		if !slices.Contains(RequireNames(), r) {
			return n, fmt.Errorf("sandbox: require %q: unknown mechanism (known: %s)", r, strings.Join(RequireNames(), ", "))
		}
		if ok, why := hostProvides(r); r == requireEgressProxy && !proxy {
			missing.Missing = append(missing.Missing, r)
			missing.Why[r] = "the run has no egress proxy listener (Config.Proxy is false)"
		} else if !ok {
			missing.Missing = append(missing.Missing, r)
			missing.Why[r] = why
		}
		switch r {
		case requireLandlock, requireLandlockNet:
			n.landlock = true
		case requireSeccomp:
			n.seccomp = true
		case requireNetNS:
			n.netns = true
		case requireEgressProxy:
			n.egress = true
		case requireProcFS:
			n.procfs = true
		}
	}
	if len(missing.Missing) > 0 {
		return n, missing
	}
	return n, nil
}
