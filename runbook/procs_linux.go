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

// escapeChecks is the receipt's "runbook" line.
const escapeChecks = "start-up probes inside the sandbox; escape checks after every step (audit chain, cgroup membership, host writes, probes again) and during it (cgroup, canary, metadata)"

// afterStep finds nothing: the cgroup and pid namespace checks hold a
// sandbox's processes on Linux, during a step and after it.
func (s *sandboxProcs) afterStep() []string { return nil }

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
	if self, err := os.Readlink("/proc/self/ns/pid"); err != nil || self == ns {
		ns = "" // not a pid namespace of its own: only descent ties a process to it
	}
	return &sandboxProcs{init: initPid, pidNS: ns, cgroup: cg}, nil
}

// members returns the pids of the sandbox's processes, with why each
// belongs. A process that exits during the scan is left out.
func (s *sandboxProcs) members() map[int]string {
	out := map[int]string{}
	// Descendants of the init, however deep, even if (impossibly) in
	// another pid namespace.
	for _, pid := range descendants(s.init)[1:] {
		out[pid] = "descendant"
	}
	for _, pid := range hostPids() {
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		switch {
		case pid == s.init && (s.pidNS == "" || ns == s.pidNS):
			out[pid] = "init"
		case s.pidNS != "" && ns == s.pidNS:
			out[pid] = "pid namespace"
		}
	}
	return out
}

// left returns the processes of the sandbox's pid namespace still alive,
// for the teardown's residue check (a pid reused since by another
// process is not counted: it is in another namespace).
func (s *sandboxProcs) left() map[int]string {
	if s.pidNS == "" {
		return map[int]string{}
	}
	out := map[int]string{}
	for pid, why := range s.members() {
		if why != "descendant" {
			out[pid] = why
		}
	}
	return out
}

// outsideCgroup returns, for every process descended from the init
// (the init included) whose cgroups differ from the init's at launch, a
// line naming it and where it is. Every process of the sandbox's pid
// namespace descends from its init (orphans are reparented to it), so
// walking the init's children is complete, and costs what the sandbox
// holds rather than what the host holds.
func (s *sandboxProcs) outsideCgroup() []string {
	var out []string
	for _, pid := range descendants(s.init) {
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || inSandboxGroup(cg, s.cgroup) || exiting(pid) {
			continue // gone, where it belongs, or on its way out
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		out = append(out, fmt.Sprintf("pid %d (%s) is in %s, not in the sandbox's %s",
			pid, strings.TrimSpace(string(comm)), oneLine(cg), oneLine(s.cgroup)))
	}
	sort.Strings(out)
	return out
}

// inSandboxGroup reports whether cg (a /proc/PID/cgroup) is own, the
// sandbox's, with each hierarchy either the same or one step group
// deeper: a session's step runs in a group of its own under the
// sandbox's, "airlock-step-N", for memory and pids, and so, while it
// forks a step, does the init's main thread (docs/sessions.md, "Caps").
func inSandboxGroup(cg, own []byte) bool {
	if bytes.Equal(cg, own) {
		return true
	}
	got, want := bytes.Split(cg, []byte("\n")), bytes.Split(own, []byte("\n"))
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if bytes.Equal(got[i], want[i]) {
			continue
		}
		rest, ok := bytes.CutPrefix(got[i], want[i])
		n, isStep := bytes.CutPrefix(rest, []byte("/airlock-step-"))
		if !ok || !isStep || len(n) == 0 || len(n) > 9 || bytes.ContainsFunc(n, func(r rune) bool { return r < '0' || r > '9' }) {
			return false
		}
	}
	return true
}

// maxDescendants bounds the walk (the sandbox's tasks cap is far lower).
const maxDescendants = 65536

// descendants returns root and every process descended from it, through
// /proc/PID/task/TID/children (each thread's children).
func descendants(root int) []int {
	out := []int{root}
	for i := 0; i < len(out) && len(out) < maxDescendants; i++ {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", out[i]))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", out[i], t.Name()))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					out = append(out, pid)
				}
			}
		}
	}
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

// pfExiting is the kernel's PF_EXITING task flag.
const pfExiting = 0x4

// exiting reports whether pid is a zombie, dead, or exiting: the kernel
// moves an exiting task out of its v1 cgroups (to the roots) while it is
// still listed, which is not an escape.
func exiting(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := statFields(stat)
	if len(f) < 7 {
		return false
	}
	if f[0] == "Z" || f[0] == "X" || f[0] == "x" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfExiting != 0
}

// statFields returns the fields of a /proc/PID/stat line after the
// command name, from the state on: the name, in parentheses, may itself
// hold spaces and parentheses.
func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// statPPid returns the parent pid from a /proc/PID/stat line.
func statPPid(stat []byte) int {
	if f := statFields(stat); len(f) >= 2 {
		n, _ := strconv.Atoi(f[1])
		return n
	}
	return 0
}

// oneLine joins a /proc file's lines with "; ".
func oneLine(b []byte) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", " ; ")), " ")
}

// hostNetNamespaces maps every network namespace on the host to the pids
// in it, for the evidence.
func hostNetNamespaces() map[string][]int {
	out := map[string][]int{}
	for _, pid := range hostPids() {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil {
			out[ns] = append(out[ns], pid)
		}
	}
	return out
}

// hostPids returns the pid of every process on the host, in increasing
// order.
func hostPids() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}
