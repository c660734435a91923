package doctor

import (
	"context"
	"fmt"
)

// Check probes this host. It starts two short-lived children (in new
// namespaces) and reads /proc and /sys; on macOS it runs /usr/bin/true
// under a generated Seatbelt profile. It changes nothing.
func Check(ctx context.Context) Report { return CheckWith(ctx, HostProbes()) }

// CheckWith is Check with the host's readings replaced by p. A probe left
// nil counts as failed, so a partial set reports controls missing rather
// than strong.
func CheckWith(ctx context.Context, p Probes) Report {
	p = p.withDefaults()
	r := Report{Host: Host{OS: p.OS, Arch: p.Arch, UID: p.Euid, Root: p.Euid == 0}}
	r.Host.Kernel, _ = p.read("proc/sys/kernel/osrelease")
	switch p.OS {
	case "linux":
	case "darwin":
		r.Host.Kernel = p.Kernel
		r.Controls = darwin(ctx, p)
		return r
	default:
		r.Controls = notLinux(p)
		return r
	}
	ns := namespaces(ctx, p)
	byName := map[string]Control{}
	for _, c := range ns {
		byName[c.Name] = c
	}
	r.Host.Container = container(p)
	sc := seccompControl(ctx, p)
	ll := landlock(p)
	r.Controls = append(r.Controls, privileges(p))
	r.Controls = append(r.Controls, ns...)
	r.Controls = append(r.Controls, pivotRoot(p, byName[RequireMountNS]), procFS(ctx, p, byName[RequireMountNS]), noNewPrivs(p), sc)
	r.Controls = append(r.Controls, ll...)
	r.Controls = append(r.Controls, cgroups(p)...)
	r.Controls = append(r.Controls, openFiles(p), egressProxy(byName[RequireNetNS], byName[RequireMountNS], ll[1], sc)) // ll[1]: landlock-net
	return r
}

// notLinux reports every control missing on a system that is neither
// Linux nor macOS: they are Linux kernel features.
func notLinux(p Probes) []Control {
	out := []Control{privileges(p)}
	for _, n := range requirementNames[1:] {
		c := Control{Name: n, Mechanism: "none", Strength: Missing,
			Detail: fmt.Sprintf("airlock's sandbox controls are Linux kernel features; this is %s", p.OS),
			Fix:    "run airlock on Linux (a VM or container host) for a sandbox"}
		if n == RequireEgressProxy {
			c.Mechanism, c.Strength = "airlock proxy, by proxy variables only", Weak
			c.Detail = "without a network namespace, code that ignores HTTP_PROXY reaches the network directly"
		}
		out = append(out, c)
	}
	return out
}

// privileges reports who the sandbox would run as. It is a fact, not a
// weakness: rootless runs are supported through a user namespace.
func privileges(p Probes) Control {
	if p.Euid == 0 {
		return Control{Name: ControlPrivileges, Mechanism: "root (uid 0)", Strength: Strong,
			Detail: "namespaces, cgroups and pivot_root need no delegation; the sandboxed command still runs as uid 65534 with no capabilities"}
	}
	c := Control{Name: ControlPrivileges, Mechanism: fmt.Sprintf("unprivileged (uid %d): rootless mode", p.Euid), Strength: Strong,
		Detail: "the sandbox is built inside a user namespace; resource caps need a cgroup delegated to this user (see the cgroup controls)"}
	g, err := p.Groups()
	switch {
	case err != nil:
		c.Strength = Missing
		c.Detail += fmt.Sprintf("; the supplementary groups could not be read (%v): airlock run refuses", err)
	case g.CanDrop():
		c.Detail += fmt.Sprintf("; the supplementary groups %v are dropped inside (newgidmap with a subordinate gid of %s)", g.Extra, g.User)
	case len(g.Extra) > 0:
		c.Strength = Missing
		c.Detail += fmt.Sprintf("; the caller is in supplementary groups %v, which a rootless sandbox cannot drop here: airlock run refuses (docs/sandbox.md, \"Groups\")", g.Extra)
		c.Fix = g.Refusal().Error()
	}
	return c
}
