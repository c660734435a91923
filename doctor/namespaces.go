package doctor

import (
	"context"
	"fmt"
)

// nsInfo describes one namespace control.
type nsInfo struct {
	name, ns, flag, config, what string
}

var nsControls = []nsInfo{
	{RequirePIDNS, "pid", "CLONE_NEWPID", "CONFIG_PID_NS", "the sandbox sees only its own processes; its init reaps and forwards signals"},
	{RequireMountNS, "mnt", "CLONE_NEWNS", "CONFIG_NAMESPACES", "a private filesystem view built from read-only binds"},
	{RequireNetNS, "net", "CLONE_NEWNET", "CONFIG_NET_NS", "only lo: no route out except the airlock proxy inside it"},
	{RequireIPCNS, "ipc", "CLONE_NEWIPC", "CONFIG_IPC_NS", "no System V IPC or POSIX message queues shared with the host"},
	{RequireUTSNS, "uts", "CLONE_NEWUTS", "CONFIG_UTS_NS", "its own host name"},
	{RequireCgroupNS, "cgroup", "CLONE_NEWCGROUP", "CONFIG_CGROUPS", "its cgroup appears as the root: the host's layout stays hidden"},
}

// namespaces reports the user namespace and the six others, from real
// children: one with every namespace at once and, if that fails, one per
// namespace to say which. Every child is in a new user namespace too, as
// the sandbox's init is, root's included: root in a container may hold no
// CAP_SYS_ADMIN, and namespaces owned by a user namespace of its own are
// what it can still make.
func namespaces(ctx context.Context, p Probes) []Control {
	user := userNamespace(ctx, p)
	out := []Control{user}
	rootless := p.Euid != 0
	all := []string{"user"}
	for _, n := range nsControls {
		all = append(all, n.ns)
	}
	allErr := error(nil)
	if user.Strength == Strong {
		allErr = p.Spawn(ctx, all...)
	}
	for _, n := range nsControls {
		c := Control{Name: n.name, Mechanism: fmt.Sprintf("%s namespace (%s)", n.ns, n.flag), Strength: Strong, Detail: n.what}
		if rootless {
			c.Mechanism = fmt.Sprintf("%s namespace (%s) inside a user namespace", n.ns, n.flag)
		}
		switch {
		case !p.exists("proc/self/ns/" + n.ns):
			c.Strength = Missing
			c.Detail = fmt.Sprintf("the kernel has no %s namespaces (/proc/self/ns/%s is absent)", n.ns, n.ns)
			c.Fix = "use a kernel built with " + n.config + "=y (Linux 4.6 or later for cgroup namespaces)"
		case user.Strength != Strong:
			c.Strength = Missing
			c.Detail = "the sandbox makes its namespaces inside a user namespace of its own, and that is not available (see userns)"
			if rootless {
				c.Detail = "an unprivileged user needs a user namespace to create any other namespace, and it is not available (see userns)"
			}
			c.Fix = user.Fix
		case allErr != nil:
			if err := p.Spawn(ctx, "user", n.ns); err != nil {
				c.Strength = Missing
				c.Detail = fmt.Sprintf("creating a %s namespace failed: %v%s", n.ns, err, seccompHint(p))
				c.Fix = "run the container with a seccomp profile that lets it create namespaces (podman's default does; Docker's and containerd's refuse them without CAP_SYS_ADMIN), or run airlock on the host"
			}
		}
		out = append(out, c)
	}
	return out
}

// userNamespace reports whether this user can create a user namespace
// and use a capability in it, and explains why not.
func userNamespace(ctx context.Context, p Probes) Control {
	c := Control{Name: RequireUserNS, Mechanism: "user namespace (CLONE_NEWUSER)", Strength: Strong}
	if !p.exists("proc/self/ns/user") {
		c.Strength, c.Mechanism = Missing, "none"
		c.Detail = "the kernel has no user namespaces (/proc/self/ns/user is absent)"
		c.Fix = "use a kernel built with CONFIG_USER_NS=y, or run airlock as root"
		return c
	}
	err := p.Spawn(ctx, "user")
	why, fix := userNSRestriction(p, p.Euid != 0)
	if err == nil {
		c.Detail = "created, with the caller mapped to root inside and a capability used there"
		if p.Euid == 0 {
			if w, _ := userNSRestriction(p, true); w != "" {
				c.Detail += "; unprivileged users cannot: " + w
			} else {
				c.Detail += "; unprivileged users can too"
			}
		}
		return c
	}
	c.Strength, c.Mechanism = Missing, "none"
	c.Detail = fmt.Sprintf("creating a user namespace failed: %v", err)
	if why != "" {
		c.Detail += ": " + why
		c.Fix = fix
		return c
	}
	c.Detail += seccompHint(p)
	if p.Euid != 0 {
		c.Fix = "run airlock as root, or find what refuses CLONE_NEWUSER on this host (an LSM policy, a container's seccomp profile)"
	}
	return c
}

// userNSRestriction explains, from the sysctls that gate them, why user
// namespaces are refused to a user (unprivileged or not), with the fix;
// "" when no sysctl refuses them.
func userNSRestriction(p Probes, unprivileged bool) (why, fix string) {
	if v, ok := p.read("proc/sys/user/max_user_namespaces"); ok && v == "0" {
		return "user.max_user_namespaces is 0, so nobody (not even root) may create one",
			"sudo sysctl -w user.max_user_namespaces=15000 (and set it in /etc/sysctl.d/ to persist)"
	}
	if !unprivileged {
		return "", ""
	}
	if v, ok := p.read("proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
		exe := p.Executable
		if exe == "" {
			exe = "/usr/local/bin/airlock"
		}
		return "kernel.apparmor_restrict_unprivileged_userns=1: AppArmor (Ubuntu 23.10 and later, 24.04 LTS) " +
				"lets unconfined programs create user namespaces but strips every capability in them, " +
				"the most reported failure of bubblewrap-based sandboxes",
			"give airlock an AppArmor profile that allows user namespaces (narrowest fix): " +
				"write /etc/apparmor.d/airlock containing\n" +
				"  abi <abi/4.0>,\n  include <tunables/global>\n" +
				"  profile airlock " + exe + " flags=(unconfined) {\n    userns,\n  }\n" +
				"then run: sudo apparmor_parser -r /etc/apparmor.d/airlock. " +
				"Or, for the whole host (weaker): sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0. Or run airlock as root."
	}
	if v, ok := p.read("proc/sys/kernel/unprivileged_userns_clone"); ok && v == "0" {
		return "kernel.unprivileged_userns_clone=0 (a Debian and older Ubuntu kernel switch) refuses them to unprivileged users",
			"sudo sysctl -w kernel.unprivileged_userns_clone=1 (and set it in /etc/sysctl.d/ to persist), or run airlock as root"
	}
	return "", ""
}

// seccompHint notes a seccomp filter already on this process: a container
// runtime's profile is the usual reason namespace creation fails without
// a sysctl to explain it.
func seccompHint(p Probes) string {
	if st := p.status(); st["Seccomp"] == "2" {
		return " (this process already runs under a seccomp filter, as in a container, whose profile may refuse namespace creation)"
	}
	return ""
}
