package runbook

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// procInfo is what the evidence and the cgroup check record of one host
// process that belongs to the sandbox.
type procInfo struct {
	Pid     int               `json:"pid"`
	PPid    int               `json:"ppid"`
	Comm    string            `json:"comm"`
	State   string            `json:"state,omitempty"`
	Cmdline []string          `json:"cmdline,omitempty"`
	Exe     string            `json:"exe,omitempty"`
	Uids    string            `json:"uids,omitempty"`
	Cgroup  string            `json:"cgroup"`
	NS      map[string]string `json:"namespaces,omitempty"`
	Sockets []string          `json:"sockets,omitempty"`
	// Why says how the process was tied to the sandbox: "init",
	// "descendant" of the init, or "pid namespace".
	Why string `json:"why"`
}

// sandboxProcs identifies the sandbox's processes on the host: its init,
// everything descended from it, and everything in its pid namespace.
type sandboxProcs struct {
	init   int
	pidNS  string // the init's pid namespace, "pid:[inode]"
	cgroup []byte // the init's /proc/PID/cgroup at launch
}

// newSandboxProcs records the init's pid namespace and cgroups; call it
// once the init has been placed in its group.
func newSandboxProcs(initPid int) (*sandboxProcs, error) {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", initPid))
	if err != nil {
		return nil, fmt.Errorf("runbook: the init's pid namespace: %w", err)
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", initPid))
	if err != nil {
		return nil, fmt.Errorf("runbook: the init's cgroups: %w", err)
	}
	return &sandboxProcs{init: initPid, pidNS: ns, cgroup: cg}, nil
}

// members returns the pids of the sandbox's processes, with why each
// belongs. A process that exits during the scan is left out.
func (s *sandboxProcs) members() map[int]string {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	out := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pid == s.init {
			out[pid] = "init"
		} else if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && ns == s.pidNS {
			out[pid] = "pid namespace"
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			parent[pid] = statPPid(st)
		}
	}
	// Descendants of the init, however deep, even if (impossibly) in
	// another pid namespace.
	for pid := range parent {
		for p, hops := parent[pid], 0; p > 1 && hops < 4096; p, hops = parent[p], hops+1 {
			if p == s.init {
				if _, ok := out[pid]; !ok {
					out[pid] = "descendant"
				}
				break
			}
		}
	}
	return out
}

// outsideCgroup returns, for every process of the sandbox whose cgroups
// differ from the init's at launch, a line naming it and where it is.
func (s *sandboxProcs) outsideCgroup() []string {
	var out []string
	for pid := range s.members() {
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || bytes.Equal(cg, s.cgroup) {
			continue // gone, or where it belongs
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		out = append(out, fmt.Sprintf("pid %d (%s) is in %s, not in the sandbox's %s",
			pid, strings.TrimSpace(string(comm)), oneLine(cg), oneLine(s.cgroup)))
	}
	sort.Strings(out)
	return out
}

// tree describes every process of the sandbox, for the evidence.
func (s *sandboxProcs) tree() []procInfo {
	var out []procInfo
	for pid, why := range s.members() {
		out = append(out, describeProc(pid, why))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

func describeProc(pid int, why string) procInfo {
	dir := fmt.Sprintf("/proc/%d/", pid)
	p := procInfo{Pid: pid, Why: why, NS: map[string]string{}}
	if st, err := os.ReadFile(dir + "stat"); err == nil {
		p.PPid = statPPid(st)
	}
	if b, err := os.ReadFile(dir + "comm"); err == nil {
		p.Comm = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(dir + "cmdline"); err == nil && len(b) > 0 {
		p.Cmdline = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	p.Exe, _ = os.Readlink(dir + "exe")
	if b, err := os.ReadFile(dir + "status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(l, "State:"):
				p.State = strings.TrimSpace(strings.TrimPrefix(l, "State:"))
			case strings.HasPrefix(l, "Uid:"):
				p.Uids = strings.Join(strings.Fields(strings.TrimPrefix(l, "Uid:")), " ")
			}
		}
	}
	if b, err := os.ReadFile(dir + "cgroup"); err == nil {
		p.Cgroup = oneLine(b)
	}
	for _, ns := range []string{"pid", "net", "mnt", "user", "ipc", "uts", "cgroup"} {
		if l, err := os.Readlink(dir + "ns/" + ns); err == nil {
			p.NS[ns] = l
		}
	}
	if fds, err := os.ReadDir(dir + "fd"); err == nil {
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
				p.Sockets = append(p.Sockets, fd.Name()+" -> "+l)
			}
		}
	}
	return p
}

// statPPid returns the parent pid from a /proc/PID/stat line, whose
// second field (the command name, in parentheses) may itself hold spaces
// and parentheses.
func statPPid(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// oneLine joins a /proc file's lines with "; ".
func oneLine(b []byte) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", " ; ")), " ")
}

// hostNetNamespaces maps every network namespace on the host to the pids
// in it, for the evidence.
func hostNetNamespaces() map[string][]int {
	out := map[string][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, err := os.Readlink("/proc/" + e.Name() + "/ns/net"); err == nil {
			out[ns] = append(out[ns], pid)
		}
	}
	for _, pids := range out {
		sort.Ints(pids)
	}
	return out
}
