package seatbelt

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/limits"
)

// WeakerTrustd is the weaker mode (a policy's "weakerModes") that lets
// processes on macOS ask trustd to evaluate certificates, as Go programs
// and everything on Security.framework must to verify TLS: trustd then
// fetches OCSP answers, CRLs and issuers' certificates on their behalf,
// egress that bypasses the proxy and its allowlist. Without it such
// programs fail to verify certificates (OSStatus -26276); programs with
// their own CA bundle (curl, Python, Node) do not need it.
const WeakerTrustd = "macos-trustd"

// The strengths of a control, as package doctor names them.
const (
	Strong  = "strong"
	Weak    = "weak"
	Missing = "missing"
)

// Control is how macOS holds one of airlock's controls, under the name a
// policy's "require" gives it.
type Control struct {
	Name, Mechanism, Strength, Detail string
}

// Controls are airlock's controls on macOS, in doctor's order: what the
// Mac gives for each, and what it cannot. Only a strong control
// satisfies a policy's "require"; the rest fail closed there.
func Controls() []Control {
	return []Control{
		{"privileges", "the calling user", Weak,
			"macOS cannot run the command as another user without root: it runs as the caller, under the profile, with set-id programs refused"},
		{"userns", "none", Missing, "macOS has no user namespaces"},
		{"pidns", "none", Missing, "macOS has no pid namespaces: " + treeDetail},
		{"mountns", "none", Missing, "macOS has no mount namespaces: Seatbelt's file rules decide by path, and the workspace is a private copy"},
		{"netns", "none", Missing, "macOS has no network namespaces: Seatbelt allows only the proxy's loopback port"},
		{"ipcns", "none", Missing, "macOS has no IPC namespaces: the profile refuses SysV IPC and POSIX shared memory and allows POSIX semaphores"},
		{"utsns", "none", Missing, "macOS has no UTS namespaces: the host's name is seen"},
		{"cgroupns", "none", Missing, "macOS has no cgroups"},
		{"pivot-root", "none", Missing, "no root of the sandbox's own: the host's file system, read through the profile's rules"},
		{"no-new-privs", "set-id programs on the search path refused by name", Weak,
			"macOS has no no_new_privs: the profile names every set-id program it finds in the command search path when it is made"},
		{"seccomp", "none", Missing, "macOS has no seccomp: the profile denies by default by operation (files, network, Mach services, sysctl, IPC, IOKit), not by system call"},
		{"landlock", "none", Missing, "macOS has no Landlock: Seatbelt holds the files instead"},
		{"landlock-net", "none", Missing, "macOS has no Landlock: Seatbelt holds the network instead"},
		{"landlock-scope", "none", Missing, "macOS has no Landlock: the profile scopes signals to the sandbox's own processes"},
		{"cgroup", "process group and watched tree", Weak, treeDetail},
		{"cgroup-memory", "watched footprint", Weak, memoryDetail},
		{"cgroup-pids", "RLIMIT_NPROC per user and watched tree", Weak, tasksDetail},
		{"cgroup-cpu", "RLIMIT_CPU per process", Weak, "macOS has no group CPU accounting: each process has the CPU cap of its own"},
		{"open-files", "RLIMIT_NOFILE", Strong, "per process, as on Linux"},
		{"egress-proxy", "Seatbelt network-outbound to the proxy's loopback port only", Strong,
			"a program that ignores the proxy variables cannot connect elsewhere, and has no DNS (mDNSResponder refused); " +
				"the proxy listens on the host's loopback and refuses every request without the sandbox's token (407), so another local user can use neither its allowlist nor its credentials"},
		{"procfs", "none", Missing, "macOS has no /proc"},
	}
}

const (
	treeDetail = "airlock finds the command's processes every 100 ms (its process group, and children of its processes, from kern.proc) and kills them all with SIGKILL; " +
		"one that leaves the group and loses its parent between two reads escapes the kill, though not the profile or its rlimits"
	memoryDetail = "macOS has no kernel memory limit for a tree: airlock sums its processes' footprints every 100 ms and kills the tree past the cap; " +
		"memory taken between two reads is not bounded"
	tasksDetail = "RLIMIT_NPROC counts all the user's processes: it is set to the user's processes at the start plus the tasks cap; " +
		"airlock also counts the tree's processes every 100 ms and kills it past the cap; threads are not counted"
)

// Weaker lists the controls a Mac holds less strongly than Linux, for
// the receipt and doctor.
func Weaker() string {
	return "pid, mount, network, IPC and UTS namespaces (none: Seatbelt's rules by path and port instead); " +
		"the tree's memory, tasks and kill (watched every 100 ms, not held by the kernel); " +
		"CPU (per process); privileges (the calling user's); disk (watched)"
}

// Receipt names the mechanism of each control of one command on macOS:
// caps and the rlimits and notes Rlimits planned for them; disk says how
// the copies' size is held.
func Receipt(caps limits.Caps, rl []Rlimit, notes map[string]string, proxyPort int, trustd bool, disk string) map[string]string {
	r := map[string]string{
		"sandbox": "Seatbelt (sandbox-exec): a profile generated from the policy for this command, deny by default",
		"filesystem": "reads of the system's trees, the policy's readOnly and the command search path; " +
			"writes to the session's private copies (workspace, scratch, findings) and the policy's readWrite only",
		"exec":       "the resolved program and the command search path only; set-id programs refused by name",
		"user":       "the calling user: no uid drop without root",
		"namespaces": "none: macOS has no pid, mount, network, IPC or UTS namespaces",
		"network":    "no network: Seatbelt allows no connection",
		"mach":       "directory lookups of users and groups only (no keychain, preferences, pasteboard, Launch Services, Apple events)",

		limits.ControlWall:      "airlock's timer, then SIGKILL of the process group and of every process of the watched tree",
		limits.ControlCPU:       fmt.Sprintf("RLIMIT_CPU of %d s per process (SIGXCPU, SIGKILL a second later); no total for the tree", limitOf(rl, "RLIMIT_CPU")),
		limits.ControlMemory:    fmt.Sprintf("the tree's footprint watched every 100 ms, killed past %d bytes: no kernel limit", caps.MemoryBytes),
		limits.ControlTasks:     fmt.Sprintf("RLIMIT_NPROC of %d (per user: the user's processes at the start plus %d) and the tree's processes watched every 100 ms, killed past %d; threads not counted", limitOf(rl, "RLIMIT_NPROC"), caps.Tasks, caps.Tasks),
		limits.ControlDisk:      disk,
		limits.ControlOpenFiles: fmt.Sprintf("RLIMIT_NOFILE of %d per process", limitOf(rl, "RLIMIT_NOFILE")),
		limits.ControlKill:      "SIGKILL of the process group and of every process of the watched tree",
		"macos":                 "weaker than on Linux: " + Weaker(),
	}
	if proxyPort > 0 {
		r["network"] = fmt.Sprintf("Seatbelt: connections to the proxy's port %d on loopback only; no DNS; "+
			"the proxy requires the sandbox's token of every request (the proxy variables carry it)", proxyPort)
	}
	if trustd {
		r["mach"] += "; trustd (weaker mode " + WeakerTrustd + ": its certificate fetches bypass the proxy)"
	}
	for k, v := range notes {
		r[k] = v
	}
	return r
}

// limitOf returns the soft limit named in rl.
func limitOf(rl []Rlimit, name string) uint64 {
	for _, r := range rl {
		if r.Name == name {
			return r.Cur
		}
	}
	return 0
}
