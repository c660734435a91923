package limits

import "strings"

// whyMissing explains a missing require name.
func (g *Group) whyMissing(name string, why map[string]string) string {
	if w, ok := why[name]; ok {
		return w
	}
	if w, ok := why[RequireCgroup]; ok {
		return w
	}
	switch name {
	case RequireCgroupMemory:
		return "no memory controller available to this group; found: " + g.receipt[ControlMemory]
	case RequireCgroupPids:
		return "no pids controller available to this group; found: " + g.receipt[ControlTasks]
	case RequireCgroupCPU:
		return "no group CPU accounting; found: " + g.receipt[ControlCPU]
	}
	return "not available"
}

func joinReasons(prev string, more []string) string {
	if prev != "" {
		more = append([]string{prev}, more...)
	}
	return strings.Join(more, "; ")
}

// describe says what the group provides and the mechanism of each control.
func (s *sysGroup) describe(why map[string]string) (map[string]bool, map[string]string) {
	p := map[string]bool{}
	r := map[string]string{
		ControlDisk:      "RLIMIT_FSIZE (+ tmpfs size by sandbox)",
		ControlOpenFiles: "RLIMIT_NOFILE",
	}
	v1, v2 := s.v1, s.v2
	p[RequireCgroup] = v1 != nil || v2 != nil

	switch {
	case v1 != nil && v1.has("memory"):
		p[RequireCgroupMemory] = true
		r[ControlMemory] = "cgroup v1 memory.limit_in_bytes"
		if exists(v1.dirs["memory"], "memory.memsw.limit_in_bytes") {
			r[ControlMemory] += " + memory.memsw.limit_in_bytes"
		}
		if exists(v1.dirs["memory"], tcpLimitFile) {
			r[ControlMemory] += " + " + tcpLimitFile + " (socket buffers, a quarter of the cap)"
		}
	case v2 != nil && v2.mem:
		p[RequireCgroupMemory] = true
		r[ControlMemory] = "cgroup v2 memory.max + memory.oom.group"
		if v2.swap {
			r[ControlMemory] += " + memory.swap.max=0"
		}
	default:
		r[ControlMemory] = "RLIMIT_DATA per process (no memory cgroup: kernel memory, such as TCP socket buffers between the sandbox's own sockets, is counted by nothing)"
	}

	switch {
	case v1 != nil && v1.has("pids"):
		p[RequireCgroupPids] = true
		r[ControlTasks] = "cgroup v1 pids.max"
	case v2 != nil && v2.pids:
		p[RequireCgroupPids] = true
		r[ControlTasks] = "cgroup v2 pids.max"
	default:
		r[ControlTasks] = "RLIMIT_NPROC per user namespace and uid (no pids cgroup)"
	}

	switch {
	case v1 != nil && v1.has("cpuacct"):
		p[RequireCgroupCPU] = true
		r[ControlCPU] = "cgroup v1 cpuacct.usage watch + RLIMIT_CPU"
	case v2 != nil:
		p[RequireCgroupCPU] = true
		r[ControlCPU] = "cgroup v2 cpu.stat usage_usec watch + RLIMIT_CPU"
	default:
		r[ControlCPU] = "RLIMIT_CPU per process (no cgroup: the group's total is not capped)"
	}

	switch {
	case v2 != nil && v2.killf:
		r[ControlKill] = "cgroup v2 cgroup.kill"
	case v1 != nil && v1.has("freezer"):
		r[ControlKill] = "cgroup v1 freezer (freeze, SIGKILL, thaw)"
	case v2 != nil:
		r[ControlKill] = "cgroup v2 cgroup.freeze (freeze, SIGKILL, thaw)"
	case v1 != nil:
		r[ControlKill] = "cgroup v1 SIGKILL until empty (no freezer)"
	default:
		r[ControlKill] = "SIGKILL to the placed process by pidfd (no cgroup; a pid namespace init takes its namespace with it)"
	}
	if p[RequireCgroup] {
		r[ControlWall] = "wall clock timer in Watch, then the group kill"
	} else {
		r[ControlWall] = "wall clock timer in Watch, then SIGKILL to the placed process"
	}
	if w := why[RequireCgroup]; w != "" && !p[RequireCgroup] {
		r[NoteCgroupUnavailable] = w
	}
	return p, r
}
