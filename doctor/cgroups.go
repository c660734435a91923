package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/limits"
)

// cgroupControls maps limits' controller names to requirement names and
// to the fallback limits uses without the controller (the words of its
// run receipt).
var cgroupControls = []struct {
	controller, name, purpose, fallback, lost string
}{
	{"memory", RequireCgroupMemory, "memoryMb for the whole process tree (OOM kill)",
		"RLIMIT_DATA per process", "each process gets the limit on its own, so a tree can use many times memoryMb, and kernel memory (TCP socket buffers between the sandbox's own sockets) is counted by nothing; require cgroup-memory to refuse such a host"},
	{"pids", RequireCgroupPids, "processCount for the whole tree (a fork bomb stops at the cap)",
		"RLIMIT_NPROC per user namespace and uid", "it counts every task of the sandbox's uid rather than the tree, and holds only for a uid of the sandbox's own"},
	{"cpu", RequireCgroupCPU, "cpuSeconds for the whole tree",
		"RLIMIT_CPU per process", "each process gets cpuSeconds on its own; the wall clock still bounds the run"},
}

// cgroups reports the cgroup controls: a group of the run's own that
// holds (and kills) the whole tree, then each controller, with the rlimit
// fallback limits uses where a controller is unusable.
func cgroups(p Probes) []Control {
	info := p.Cgroups()
	mode := cgroupMode(info)
	find := func(name string) *limits.Controller {
		if i := slices.IndexFunc(info.Controllers, func(c limits.Controller) bool { return c.Name == name }); i >= 0 {
			return &info.Controllers[i]
		}
		return nil
	}
	out := []Control{cgroupTree(p, info, find("freezer"), mode)}
	for _, cc := range cgroupControls {
		ctl := find(cc.controller)
		c := Control{Name: cc.name}
		if ctl != nil && ctl.Usable {
			c.Strength = Strong
			c.Mechanism = fmt.Sprintf("cgroup v%d %s", ctl.Version, ctl.File)
			c.Detail = fmt.Sprintf("enforces %s; %s; this process is in %s", cc.purpose, mode, ctl.Path)
		} else {
			c.Strength = Weak
			c.Mechanism = cc.fallback + " (fallback)"
			c.Detail = fmt.Sprintf("no usable %s controller (%s), so %s falls back to %s: %s; %s",
				cc.controller, controllerWhy(ctl), cc.purpose, cc.fallback, cc.lost, mode)
			c.Fix = cgroupFix(p, ctl)
		}
		out = append(out, c)
	}
	return out
}

// cgroupTree reports whether a run gets a cgroup of its own, which lets
// the teardown reach every process (double-forked daemons included).
func cgroupTree(p Probes, info limits.HostInfo, freezer *limits.Controller, mode string) Control {
	c := Control{Name: RequireCgroup, Strength: Strong}
	usable := slices.ContainsFunc(info.Controllers, func(c limits.Controller) bool { return c.Usable })
	switch {
	case usable && info.CgroupKill && (p.Euid == 0 || info.Delegated):
		c.Mechanism = "cgroup of the run's own, killed with cgroup v2 cgroup.kill"
	case freezer != nil && freezer.Usable:
		c.Mechanism = fmt.Sprintf("cgroup of the run's own, killed with cgroup v%d %s (freeze, SIGKILL, thaw)", freezer.Version, freezer.File)
	case usable:
		c.Mechanism = "cgroup of the run's own, killed by SIGKILL until empty (no freezer)"
	default:
		c.Strength = Weak
		c.Mechanism = "SIGKILL to the sandbox's init (fallback)"
		c.Detail = "no cgroup this user can create (" + controllerWhy(freezer) +
			"): the pid namespace's init takes its namespace with it, but a process that left the namespace would not be tracked; " + mode
		c.Fix = cgroupFix(p, freezer)
		return c
	}
	c.Detail = "every process of the run, double-forked daemons included, is found and killed at the end; " + mode
	return c
}

func controllerWhy(ctl *limits.Controller) string {
	if ctl == nil || ctl.Why == "" && ctl.Version == 0 {
		return "the controller is not mounted"
	}
	if ctl.Why == "" {
		return "not usable"
	}
	return ctl.Why
}

// cgroupMode describes the host's cgroup layout in a few words.
func cgroupMode(info limits.HostInfo) string {
	switch info.Mode {
	case limits.ModeHybrid:
		return "host cgroups: hybrid (v1 controllers, v2 at " + info.UnifiedMount + ")"
	case limits.ModeV2:
		return "host cgroups: v2 at " + info.UnifiedMount
	case limits.ModeV1:
		return "host cgroups: v1"
	}
	s := "host cgroups: none mounted"
	if len(info.Notes) > 0 {
		s += " (" + strings.Join(info.Notes, "; ") + ")"
	}
	return s
}

// cgroupFix says how to make a controller usable.
func cgroupFix(p Probes, ctl *limits.Controller) string {
	switch {
	case ctl == nil || ctl.Version == 0:
		return "enable the controller in the kernel (CONFIG_MEMCG, CONFIG_CGROUP_PIDS, CONFIG_CGROUP_CPUACCT, CONFIG_CGROUP_FREEZER) and mount the cgroup hierarchies (systemd does so at boot)"
	case p.Euid == 0:
		return "make the cgroup hierarchy writable for root (is /sys/fs/cgroup mounted read-only, as in a container?)"
	case ctl.Version == 1:
		return "cgroup v1 cannot be delegated to a user safely: run airlock as root, or boot with systemd.unified_cgroup_hierarchy=1 for cgroup v2 and delegate it"
	}
	return "delegate cgroup v2 controllers to your user with systemd: " +
		"sudo mkdir -p /etc/systemd/system/user@.service.d && " +
		"printf '[Service]\\nDelegate=memory pids cpu\\n' | sudo tee /etc/systemd/system/user@.service.d/delegate.conf && " +
		"sudo systemctl daemon-reload; log in again, and run airlock inside a delegated scope: systemd-run --user --scope -p Delegate=yes airlock ..."
}
