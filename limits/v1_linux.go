package limits

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Group is a group's directories in the v1 hierarchies. containerd's
// cgroup1 writes the limits, places processes (retrying the kernel's
// EINVAL for a task still being created) and removes the directories;
// the freeze, the kill and the counters are hand-written (see each).
type v1Group struct {
	cg   cgroup1.Cgroup
	dirs map[string]string // controller -> absolute directory
}

// v1Subsystem returns containerd's controller for a controller mounted at
// mount. The library joins a root with the controller's name, so the
// mount (or a symlink to it, as with "cpu,cpuacct") must be named so.
func v1Subsystem(name, mount string) (cgroup1.Subsystem, bool) {
	root := filepath.Dir(mount)
	if filepath.Base(mount) != name {
		target, err := filepath.EvalSymlinks(filepath.Join(root, name))
		if err != nil || target != filepath.Clean(mount) {
			return nil, false
		}
	}
	switch name {
	case "memory":
		return cgroup1.NewMemory(root), true
	case "pids":
		return cgroup1.NewPids(root), true
	case "cpuacct":
		return cgroup1.NewCpuacct(root), true
	case "freezer":
		return cgroup1.NewFreezer(root), true
	}
	return nil, false
}

// newV1Group makes dir (relative to each hierarchy's parent cgroup) in
// every v1 hierarchy of l and writes the memory and pids limits. An error
// that wraps errNoPermission means this user may not create cgroups there.
// On any error nothing is left behind.
func newV1Group(l layout, parent, dir string, caps Caps) (*v1Group, error) {
	var subs []cgroup1.Subsystem
	paths := map[string]string{}
	g := &v1Group{dirs: map[string]string{}}
	for _, name := range v1Controllers {
		mount, ok := l.v1[name]
		if !ok {
			continue
		}
		s, ok := v1Subsystem(name, mount)
		if !ok {
			continue
		}
		p := l.v1Own[name]
		if parent != "" {
			p = path.Clean("/" + parent)
		}
		p = path.Join(p, dir)
		abs := filepath.Join(mount, p)
		// Make the directory here, not in the library (which uses
		// MkdirAll): an existing one is another run's, never ours, and a
		// missing parent is the caller's mistake.
		if err := os.Mkdir(abs, 0o755); err != nil {
			g.remove()
			return nil, classify(fmt.Errorf("limits: cgroup v1 %s: %w", name, err))
		}
		g.dirs[name] = abs
		paths[name] = p
		subs = append(subs, s)
	}
	if len(subs) == 0 {
		return nil, nil
	}
	res := &specs.LinuxResources{}
	if _, ok := g.dirs["memory"]; ok {
		res.Memory = &specs.LinuxMemory{Limit: &caps.MemoryBytes}
	}
	if _, ok := g.dirs["pids"]; ok {
		res.Pids = &specs.LinuxPids{Limit: &caps.Tasks}
	}
	pathOf := func(n cgroup1.Name) (string, error) {
		if p, ok := paths[string(n)]; ok {
			return p, nil
		}
		return "", cgroup1.ErrControllerNotActive
	}
	hier := func() ([]cgroup1.Subsystem, error) { return subs, nil }
	cg, err := cgroup1.New(pathOf, res, cgroup1.WithHierarchy(hier), func(c *cgroup1.InitConfig) error {
		c.InitCheck = cgroup1.AllowAny
		return nil
	})
	if err != nil {
		g.remove()
		return nil, fmt.Errorf("limits: cgroup v1: write limits: %w", err)
	}
	g.cg = cg
	if mem, ok := g.dirs["memory"]; ok && exists(mem, "memory.memsw.limit_in_bytes") {
		// Memory plus swap gets the same limit, so that a host with swap
		// cannot let the group page out instead of being OOM-killed. The
		// library writes memsw only when asked and fails on a host
		// without swap accounting, hence the check and the write here.
		if err := writeFile(mem, "memory.memsw.limit_in_bytes", strconv.FormatInt(caps.MemoryBytes, 10)); err != nil {
			g.remove()
			return nil, fmt.Errorf("limits: cgroup v1 memory: %w", err)
		}
	}
	if mem, ok := g.dirs["memory"]; ok && exists(mem, tcpLimitFile) {
		// v1 charges no socket buffer to memory.limit_in_bytes: without
		// this, a group's UDP sockets on its own lo, sent to and never
		// read, held a gigabyte of kernel memory under a 64 MiB cap. Set
		// before any process is in the group, it charges the buffers of
		// every socket the group makes (UDP's too) to a counter of their
		// own, bounded here.
		if err := writeFile(mem, tcpLimitFile, strconv.FormatInt(SocketBytes(caps.MemoryBytes), 10)); err != nil {
			g.remove()
			return nil, fmt.Errorf("limits: cgroup v1 memory: %w", err)
		}
	}
	return g, nil
}

// tcpLimitFile is cgroup v1's bound on the socket buffers of a group's
// sockets (TCP's and UDP's alike, despite its name).
const tcpLimitFile = "memory.kmem.tcp.limit_in_bytes"

// SocketBytes is the bound on a group's socket buffers where they are
// not charged to its memory (cgroup v1): a quarter of the memory cap, at
// least 16 MiB, so that the two together stay within 1.25 times the cap.
func SocketBytes(memory int64) int64 { return max(memory/4, 16<<20) }

func (g *v1Group) has(name string) bool { _, ok := g.dirs[name]; return ok }

// place writes pid to every controller's cgroup.procs.
func (g *v1Group) place(pid int) error {
	if err := g.cg.AddProc(uint64(pid)); err != nil {
		return fmt.Errorf("limits: cgroup v1: place pid %d: %w", pid, err)
	}
	return nil
}

// procs returns the processes in any of the group's directories.
func (g *v1Group) procs() ([]int, error) {
	var out []int
	for _, name := range v1Controllers {
		dir, ok := g.dirs[name]
		if !ok {
			continue
		}
		pids, err := readPids(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, p := range pids {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// kill is one round of killing: with the freezer, freeze, SIGKILL every
// process, thaw (a frozen task cannot fork, so nothing escapes the round;
// it dies when thawed); without it, SIGKILL every process listed, which
// the caller repeats until the group is empty (pids.max bounds a bomb).
// The library's Freeze polls without a deadline, and a task stuck in
// uninterruptible sleep would hang the monitor forever; this one gives up
// freezing after freezeTimeout and kills anyway.
func (g *v1Group) kill() error {
	fz := g.dirs["freezer"]
	return freezeKill(fz, "freezer.state", "FROZEN", "THAWED", func() bool {
		b, err := readBounded(filepath.Join(fz, "freezer.state"))
		return err != nil || string(b) == "FROZEN\n"
	}, g.procs)
}

// counters reads what the watch needs: CPU time, OOM kills, refused forks.
func (g *v1Group) counters(c *counters) {
	if dir, ok := g.dirs["cpuacct"]; ok {
		if ns, err := readInt(dir, "cpuacct.usage"); err == nil {
			c.cpu, c.cpuKnown = time.Duration(ns), true
		}
	}
	if dir, ok := g.dirs["memory"]; ok {
		if kv, err := readKV(dir, "memory.oom_control", "oom_kill"); err == nil {
			c.oomKills = kv["oom_kill"]
		}
	}
	if dir, ok := g.dirs["pids"]; ok {
		if kv, err := readKV(dir, "pids.events", "max"); err == nil {
			c.pidsHits = kv["max"]
		}
	}
}

// stats reads the peaks on top of the counters.
func (g *v1Group) stats(s *Stats) {
	if dir, ok := g.dirs["memory"]; ok {
		if v, err := readInt(dir, "memory.max_usage_in_bytes"); err == nil {
			s.PeakMemoryBytes = v
		}
	}
	if dir, ok := g.dirs["pids"]; ok {
		if v, err := readInt(dir, "pids.peak"); err == nil {
			s.TasksPeak = v
		}
	}
}

// remove deletes the directories that are left; the group must be
// empty. It is an rmdir of each, not the library's Delete: that walks and
// stats every file of every directory to check for processes first,
// which the kernel's rmdir checks anyway (EBUSY), and took most of
// Delete's time.
func (g *v1Group) remove() error { return removeDirs(g.dirs, "limits: cgroup v1") }
