package doctor

import (
	"context"
	"errors"
	"fmt"
)

// What a container leaves the sandbox (docs/sandbox.md, "Inside a
// container"): the doctor says which runtime it found, whether a fresh
// /proc can be mounted, and how egress is held without a network
// namespace.

// containerMarks are the files container runtimes leave in a container's
// root, with the runtime each names.
var containerMarks = []struct{ file, what string }{
	{"run/.containerenv", "podman (/run/.containerenv)"},
	{".dockerenv", "Docker (/.dockerenv)"},
	{"var/run/secrets/kubernetes.io", "a Kubernetes pod (/var/run/secrets/kubernetes.io)"},
}

// container names the container runtime this process runs under, or ""
// when no runtime's mark is found.
func container(p Probes) string {
	for _, m := range containerMarks {
		if p.exists(m.file) {
			return m.what
		}
	}
	return ""
}

// unmaskFix is how the container runtimes let a container mount a fresh
// /proc.
const unmaskFix = "run the container with its /proc unmasked: podman --security-opt unmask=/proc/*, " +
	"docker --security-opt systempaths=unconfined, Kubernetes procMount: Unmasked (with hostUsers: false)"

// procFS reports whether the sandbox gets a /proc of its own pid
// namespace. Where the kernel refuses a fresh one (a /proc with masked
// paths), the sandbox gets the host's, with its masks, if Landlock can
// close the files of other processes to it.
func procFS(ctx context.Context, p Probes, mountNS Control) Control {
	c := Control{Name: RequireProcFS, Mechanism: "a fresh /proc of the sandbox's pid namespace", Strength: Strong,
		Detail: "the sandbox sees only its own processes"}
	if mountNS.Strength != Strong {
		c.Strength, c.Mechanism = Missing, "none"
		c.Detail, c.Fix = "a /proc of its own needs a mount namespace, and it is not available (see mountns)", mountNS.Fix
		return c
	}
	err := p.Proc(ctx)
	if err == nil {
		return c
	}
	abi, _ := p.LandlockABI()
	if !errors.Is(err, errProcRefused) || abi < 1 {
		c.Strength, c.Mechanism = Missing, "none"
		c.Detail = fmt.Sprintf("mounting a fresh proc failed: %v", err)
		if errors.Is(err, errProcRefused) {
			c.Detail += "; without Landlock the host's /proc would open other processes of the sandbox's uid to it, so airlock run refuses"
		}
		c.Fix = unmaskFix
		return c
	}
	c.Strength, c.Mechanism = Weak, "the host's /proc, bound with its masks"
	c.Detail = err.Error() + ". The sandbox gets the host's /proc instead: it lists the host's processes and their command lines, " +
		"with the host's pids; their environment, memory, descriptors and directories stay closed to it (uid and Landlock), " +
		"and signals and ptrace reach only its own pid namespace. airlock run says so in the receipt; require procfs refuses it"
	c.Fix = unmaskFix
	return c
}

// egressProxy reports the egress gate: the proxy is always there; it is
// the only way out in a network namespace of the sandbox's own, or,
// where the host refuses one, by Landlock's TCP rules and airlock's
// second seccomp filter, with one gap (a host that listens on the
// proxy's port); with neither, airlock run refuses unless the policy
// accepts weakerModes egress-unenforced.
func egressProxy(netns, mountNS, landlockNet, seccomp Control) Control {
	c := Control{Name: RequireEgressProxy, Mechanism: "airlock proxy inside the sandbox's network namespace", Strength: Strong,
		Detail: "the namespace has no route out, so the proxy and its allowlist are the only path"}
	switch {
	case netns.Strength == Strong:
		return c
	case mountNS.Strength != Strong:
		// No sandbox at all: nothing but the proxy variables.
		c.Strength, c.Mechanism = Weak, "airlock proxy, by proxy variables only"
		c.Detail = "without a network namespace, code that ignores HTTP_PROXY reaches the network directly"
	case landlockNet.Strength == Strong && seccomp.Strength == Strong:
		c.Strength = Weak
		c.Mechanism = "airlock proxy on the host's loopback; Landlock allows TCP connect to its port only, seccomp refuses UDP, raw, MPTCP and unix sockets and listen"
		c.Detail = "without a network namespace of its own the sandbox shares the host's network, and the kernel keeps it to the proxy's port: " +
			"but Landlock's rules name ports, not addresses, so a host reachable from here that listens on the proxy's port is reachable directly. " +
			"airlock run uses this mode and says so in the receipt; require netns refuses it"
	default:
		c.Strength, c.Mechanism = Missing, "none: proxy variables only"
		c.Detail = "without a network namespace, Landlock's TCP rules or a seccomp filter, nothing stops code that ignores HTTP_PROXY from reaching the network: " +
			`airlock run refuses unless the policy accepts it ("weakerModes": ["egress-unenforced"])`
	}
	c.Fix = netns.Fix
	return c
}
