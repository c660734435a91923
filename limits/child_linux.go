package limits

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// childControllers are the v1 controllers a child splits off its parent.
var childControllers = []string{"memory", "pids"}

// sysChild is the Linux part of a Child: its v1 directories.
type sysChild struct {
	dirs   map[string]string // controller -> the child's directory
	parent map[string]string // controller -> the parent's directory
}

// NewChild makes an empty child group named "airlock-<name>" under g
// for one step of a session; Limit then measures what g has left and
// gives it its caps. A session makes and limits the next step's child
// while a step runs, and limits it again once that step has ended
// (nothing of the session runs between steps, so what Limit measured
// then still holds when the step starts).
//
// The child splits the memory and pids controllers where g has them as
// cgroup v1 directories (Child.Dirs): the caller moves the step's first
// process in before it executes anything, and every process it forks
// starts there. A v2 group cannot have a child with controllers while it
// holds a process (the session's init), and a group without cgroups has
// none to split: there, and for any controller g lacks, the child holds
// nothing and Rlimits lists the per-process rlimits that stand in, and
// the receipt says which holds. Delete removes the child.
func (g *Group) NewChild(name string) (*Child, error) {
	if !validName(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("limits: child name %q: use 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := &Child{group: g, sys: sysChild{dirs: map[string]string{}, parent: map[string]string{}}}
	var v1 map[string]string
	if g.sys.v1 != nil {
		v1 = g.sys.v1.dirs
	}
	for _, ctl := range childControllers {
		parent, ok := v1[ctl]
		if !ok {
			continue
		}
		dir := filepath.Join(parent, "airlock-"+name)
		if !slices.Contains(slices.Collect(maps.Values(c.sys.dirs)), dir) { // else co-mounted: one directory
			if err := os.Mkdir(dir, 0o755); err != nil {
				_ = c.Delete()
				return nil, fmt.Errorf("limits: child: cgroup v1 %s: %w", ctl, err)
			}
		}
		c.sys.dirs[ctl], c.sys.parent[ctl] = dir, parent
	}
	return c, nil
}

// Limit gives the child its caps: want, each lowered to what the session
// has left, measured now — the memory cap to the session's cap less what
// the session holds that the kernel cannot reclaim (its page cache of
// files is left out: tmpfs pages and the init's memory stay in), the
// tasks cap to the session's less the tasks in it. So a step that grows
// past its own cap is OOM-killed in its own group (the kernel picks its
// victim there, never the session's init) before the session's cap is
// reached. Call it before the step starts, never once it runs; it may be
// called again, and the caps last given hold. Called while another step
// runs, it measures that step too: call it again once that one has
// ended (what it writes then is only what changed).
func (c *Child) Limit(want ChildCaps) error {
	if want.MemoryBytes <= 0 || want.Tasks <= 0 {
		return fmt.Errorf("limits: child caps %+v: both must be positive", want)
	}
	left, err := c.group.left()
	if err != nil {
		return err
	}
	caps := ChildCaps{MemoryBytes: min(want.MemoryBytes, left.MemoryBytes), Tasks: min(want.Tasks, left.Tasks)}
	if c.limited && caps == c.caps {
		return nil // written already
	}
	raise := c.limited && caps.MemoryBytes > c.caps.MemoryBytes
	c.caps, c.limited = caps, false
	for _, ctl := range childControllers {
		if _, ok := c.sys.dirs[ctl]; ok {
			if err := c.sys.writeLimit(ctl, c.caps, raise); err != nil {
				return fmt.Errorf("limits: child: cgroup v1 %s: %w", ctl, err)
			}
		}
	}
	c.describe(c.group)
	c.limited = true
	return nil
}

// left is what g has left for a child now: its memory cap less what its
// v1 memory group holds that reclaim cannot free (at least 1 MiB), its
// tasks cap less the tasks in its v1 pids group (at least 1).
func (g *Group) left() (ChildCaps, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	left := ChildCaps{MemoryBytes: g.caps.MemoryBytes, Tasks: g.caps.Tasks}
	if g.sys.v1 == nil {
		return left, nil
	}
	if mem, ok := g.sys.v1.dirs["memory"]; ok {
		left.MemoryBytes = max(g.caps.MemoryBytes-unreclaimable(mem), 1<<20)
	}
	if pids, ok := g.sys.v1.dirs["pids"]; ok {
		cur, err := readInt(pids, "pids.current")
		if err != nil {
			return left, fmt.Errorf("limits: child: %w", err)
		}
		left.Tasks = max(g.caps.Tasks-cur, 1)
	}
	return left, nil
}

// unreclaimable is what the v1 memory group dir holds that reclaim
// cannot free: its usage less its file pages (tmpfs pages are
// swap-backed, on the anonymous lists, and count).
func unreclaimable(dir string) int64 {
	use, err := readInt(dir, "memory.usage_in_bytes")
	if err != nil {
		return 0
	}
	if kv, err := readKV(dir, "memory.stat", "total_active_file", "total_inactive_file"); err == nil {
		use -= kv["total_active_file"] + kv["total_inactive_file"]
	}
	return max(use, 0)
}

// writeLimit writes the child's cap for one controller. By hand, not
// containerd's cgroup1.New: that walks the hierarchy and stats every
// file first, for one to three writes here, on every step.
func (s *sysChild) writeLimit(ctl string, caps ChildCaps, raise bool) error {
	dir := s.dirs[ctl]
	if ctl == "pids" {
		return writeFile(dir, "pids.max", strconv.FormatInt(caps.Tasks, 10))
	}
	mem := strconv.FormatInt(caps.MemoryBytes, 10)
	// As the session's group: memory plus swap capped the same, socket
	// buffers bounded (see newV1Group). The kernel keeps memory's limit
	// at most memsw's: raised, memsw goes first.
	files := []string{"memory.limit_in_bytes"}
	if exists(dir, "memory.memsw.limit_in_bytes") {
		files = append(files, "memory.memsw.limit_in_bytes")
		if raise {
			files[0], files[1] = files[1], files[0]
		}
	}
	for _, f := range files {
		if err := writeFile(dir, f, mem); err != nil {
			return err
		}
	}
	if exists(dir, tcpLimitFile) {
		return writeFile(dir, tcpLimitFile, strconv.FormatInt(SocketBytes(caps.MemoryBytes), 10))
	}
	return nil
}

// describe fills the receipt and the rlimits that stand in for the
// controllers the child lacks.
func (c *Child) describe(g *Group) {
	c.receipt, c.rlimits = map[string]string{}, nil
	if _, ok := c.sys.dirs["memory"]; ok {
		c.receipt[ControlMemory] = fmt.Sprintf("cgroup v1 memory.limit_in_bytes of the step's own group (%d bytes), under the session's", c.caps.MemoryBytes)
	} else {
		c.rlimits = append(c.rlimits, Rlimit{Resource: unix.RLIMIT_DATA, Name: "RLIMIT_DATA", Cur: uint64(c.caps.MemoryBytes), Max: uint64(c.caps.MemoryBytes)})
		c.receipt[ControlMemory] = fmt.Sprintf("RLIMIT_DATA per process of the step (%d bytes), set on its first process just after it starts; the session's RLIMIT_DATA holds before, and for what it forks first (%s)", c.caps.MemoryBytes, noChildWhy(g))
	}
	if _, ok := c.sys.dirs["pids"]; ok {
		c.receipt[ControlTasks] = fmt.Sprintf("cgroup v1 pids.max of the step's own group (%d), under the session's", c.caps.Tasks)
	} else {
		c.rlimits = append(c.rlimits, Rlimit{Resource: unix.RLIMIT_NPROC, Name: "RLIMIT_NPROC", Cur: uint64(c.caps.Tasks), Max: uint64(c.caps.Tasks)})
		c.receipt[ControlTasks] = fmt.Sprintf("RLIMIT_NPROC of the step (%d processes and threads, per user namespace and uid, on top of the init's own): its soft limit from the step's first instruction, its hard limit just after it starts; the session's hard limit holds before (%s)", c.caps.Tasks, noChildWhy(g))
	}
	// The host's hard limits lower what the session's rlimits asked; the
	// step's are never above them.
	for i := range c.rlimits {
		for _, r := range g.rlimits {
			if r.Resource == c.rlimits[i].Resource {
				c.rlimits[i].Cur, c.rlimits[i].Max = min(c.rlimits[i].Cur, r.Cur), min(c.rlimits[i].Max, r.Max)
			}
		}
	}
}

// noChildWhy says why a controller has no child group.
func noChildWhy(g *Group) string {
	switch {
	case g.sys.v1 == nil && g.sys.v2 == nil:
		return "no cgroup"
	case g.sys.v1 == nil:
		return "no child group on cgroup v2: the session's group holds its init, and a v2 group with processes cannot give a child controllers"
	}
	return "the session's group has no cgroup v1 directory for it"
}

// Dirs returns the child's cgroup v1 directories, controller to
// directory, and for each the parent's (the session group's): the
// caller moves the step's first process into the first and the process
// that forks it back into the second (docs/sessions.md, "Each step").
// Empty when the child has no cgroup.
func (c *Child) Dirs() (child, parent map[string]string) {
	return maps.Clone(c.sys.dirs), maps.Clone(c.sys.parent)
}

// Stats reads the child's counters: OOM kills, refused forks and peak
// memory (what a step's watch and result use). The other fields, and
// those the child has no cgroup for, are 0.
func (c *Child) Stats() Stats {
	var st Stats
	if dir, ok := c.sys.dirs["memory"]; ok {
		if kv, err := readKV(dir, "memory.oom_control", "oom_kill"); err == nil {
			st.OOMKills = kv["oom_kill"]
		}
		if v, err := readInt(dir, "memory.max_usage_in_bytes"); err == nil {
			st.PeakMemoryBytes = v
		}
	}
	if dir, ok := c.sys.dirs["pids"]; ok {
		if kv, err := readKV(dir, "pids.events", "max"); err == nil {
			st.TasksLimitHits = kv["max"]
		}
	}
	return st
}

// Delete kills whatever is left in the child and removes its directories.
// It is safe to call again.
func (c *Child) Delete() error { return removeDirs(c.sys.dirs, "limits: child: cgroup v1") }

// removeDirs removes each directory of dirs (controller to directory) and
// forgets those it removed; what leads each error, before the controller.
func removeDirs(dirs map[string]string, what string) error {
	var errs []error
	for _, ctl := range slices.Sorted(maps.Keys(dirs)) {
		if err := removeDir(dirs[ctl]); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", what, ctl, err))
			continue
		}
		delete(dirs, ctl)
	}
	return errors.Join(errs...)
}

// removeDir removes a cgroup directory; while it is busy, first its
// airlock-* children (a session's step groups, left by a step that never
// ended), then SIGKILLing every process listed in it: the step's processes
// are dead or dying by now, the retry is for those still exiting.
func removeDir(dir string) error {
	err := unix.Rmdir(dir)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	subs, _ := filepath.Glob(filepath.Join(dir, "airlock-*"))
	for _, sub := range subs {
		if st, err := os.Lstat(sub); err == nil && st.IsDir() {
			if err := removeDir(sub); err != nil {
				return err
			}
		}
	}
	pids, _ := readPids(dir)
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	return rmdirRetry(dir)
}
