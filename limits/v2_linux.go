package limits

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// v2Group is a group's directory in the unified hierarchy. containerd's
// cgroup2 enables the controllers down the path, writes the limits and
// removes the directory; the kill, the directory fd and the counters are
// hand-written (see each).
type v2Group struct {
	mgr   *cgroup2.Manager
	dir   string // absolute
	fd    int    // O_PATH directory fd for CLONE_INTO_CGROUP; -1 when closed
	mem   bool   // memory.max written
	pids  bool   // pids.max written
	swap  bool   // memory.swap.max set to 0
	killf bool   // cgroup.kill exists
}

// newV2Group makes dir under the first candidate (relative to mount) that
// can hold it. With limits wanted it takes the first candidate that gets
// both the memory and the pids controller, else the one that got the most. Without limits (the unified
// side of a hybrid host) any directory will do. It returns nil, the
// reasons, when no candidate worked; nothing is left behind then.
func newV2Group(mount string, candidates []string, dir string, caps Caps, wantLimits bool) (*v2Group, []string) {
	var best *v2Group
	var why []string
	for _, cand := range candidates {
		g, err := tryV2(mount, cand, dir, caps, wantLimits)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if !wantLimits || (g.mem && g.pids) {
			if best != nil {
				best.remove()
			}
			return g, why
		}
		if best == nil || b2i(g.mem)+b2i(g.pids) > b2i(best.mem)+b2i(best.pids) {
			if best != nil {
				best.remove()
			}
			best = g
			continue
		}
		g.remove()
	}
	return best, why
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tryV2 makes cand/dir with the controllers cand offers.
func tryV2(mount, cand, dir string, caps Caps, wantLimits bool) (*v2Group, error) {
	parent := filepath.Join(mount, cand)
	if _, err := os.Stat(parent); err != nil {
		return nil, fmt.Errorf("cgroup v2 %s: %w", cand, err)
	}
	group := path.Join(cand, dir)
	abs := filepath.Join(mount, group)
	// Make the directory here, not in the library (which uses MkdirAll):
	// an existing one is another run's, never ours.
	if err := os.Mkdir(abs, 0o755); err != nil {
		return nil, classify(fmt.Errorf("cgroup v2 %s: %w", cand, err))
	}
	res := &cgroup2.Resources{}
	var offered []string
	if wantLimits {
		if b, err := readBounded(filepath.Join(parent, "cgroup.controllers")); err == nil {
			offered = strings.Fields(string(b))
		}
	}
	if slices.Contains(offered, "memory") {
		oomGroup := true
		res.Memory = &cgroup2.Memory{Max: &caps.MemoryBytes, OOMGroup: &oomGroup}
	}
	if slices.Contains(offered, "pids") {
		res.Pids = &cgroup2.Pids{Max: caps.Tasks}
	}
	mgr, err := cgroup2.NewManager(mount, group, res)
	if err != nil && (res.Memory != nil || res.Pids != nil) {
		// The controllers could not be enabled here (a parent with
		// processes answers EBUSY), and the library removed the
		// directory: make it again without them, for cgroup.kill and the
		// CPU time, in case no candidate does better.
		if err := os.Mkdir(abs, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v2 %s: %w", cand, err)
		}
		res = &cgroup2.Resources{}
		mgr, err = cgroup2.NewManager(mount, group, res)
	}
	if err != nil {
		_ = os.Remove(abs)
		return nil, fmt.Errorf("cgroup v2 %s: %w", cand, err)
	}
	return openV2(mgr, abs, res.Memory != nil, res.Pids != nil)
}

// openV2 finishes a group: swap off, the directory fd.
func openV2(mgr *cgroup2.Manager, abs string, mem, pids bool) (*v2Group, error) {
	g := &v2Group{mgr: mgr, dir: abs, fd: -1, mem: mem, pids: pids, killf: exists(abs, "cgroup.kill")}
	if mem && exists(abs, "memory.swap.max") {
		// No swap for the group: the memory cap must end in an OOM kill,
		// not in paging. The library would fail on a host without swap
		// accounting (no such file), hence the check and the write here.
		if err := writeFile(abs, "memory.swap.max", "0"); err != nil {
			g.remove()
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
		g.swap = true
	}
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		g.remove()
		return nil, fmt.Errorf("cgroup v2: open %s: %w", abs, err)
	}
	g.fd = fd
	return g, nil
}

// place writes pid to cgroup.procs (a no-op after CLONE_INTO_CGROUP).
func (g *v2Group) place(pid int) error {
	if err := g.mgr.AddProc(uint64(pid)); err != nil {
		return fmt.Errorf("limits: cgroup v2: place pid %d: %w", pid, err)
	}
	return nil
}

// populated reports whether any process is left (cgroup.events).
func (g *v2Group) populated() (bool, error) {
	kv, err := readKV(g.dir, "cgroup.events")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return kv["populated"] != 0, nil
}

// kill is one round: cgroup.kill (5.14+), which the kernel makes atomic
// against forks; else freeze (cgroup.freeze), SIGKILL each process, thaw.
// Hand-written because the library's Kill falls back to waiting for the
// processes it signalled, which would reap the caller's own child and
// steal its exit status, and its Freeze polls without a deadline.
func (g *v2Group) kill() error {
	if g.killf {
		if err := writeFile(g.dir, "cgroup.kill", "1"); err == nil {
			return nil
		}
	}
	return freezeKill(g.dir, "cgroup.freeze", "1", "0", func() bool {
		kv, err := readKV(g.dir, "cgroup.events")
		return err != nil || kv["frozen"] == 1
	}, func() ([]int, error) { return readPids(g.dir) })
}

// counters reads the CPU time (cpu.stat is there without the cpu
// controller), OOM kills and refused forks.
func (g *v2Group) counters(c *counters) {
	if kv, err := readKV(g.dir, "cpu.stat", "usage_usec"); err == nil {
		if us, ok := kv["usage_usec"]; ok {
			c.cpu, c.cpuKnown = time.Duration(us)*time.Microsecond, true
		}
	}
	if g.mem {
		if kv, err := readKV(g.dir, "memory.events", "oom_kill", "oom_group_kill"); err == nil {
			c.oomKills = max(kv["oom_kill"], kv["oom_group_kill"])
		}
	}
	if g.pids {
		if kv, err := readKV(g.dir, "pids.events", "max"); err == nil {
			c.pidsHits = kv["max"]
		}
	}
}

// stats reads the peaks (memory.peak: 5.19+; pids.peak: 6.1+).
func (g *v2Group) stats(s *Stats) {
	if g.mem {
		if v, err := readInt(g.dir, "memory.peak"); err == nil {
			s.PeakMemoryBytes = v
		}
	}
	if g.pids {
		if v, err := readInt(g.dir, "pids.peak"); err == nil {
			s.TasksPeak = v
		}
	}
}

// remove closes the fd and deletes the directory; the group must be empty.
func (g *v2Group) remove() error {
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
	if g.dir == "" {
		return nil
	}
	// An rmdir, not the library's Delete, for the reason given at
	// v1Group.remove.
	if err := rmdirRetry(g.dir); err != nil {
		return fmt.Errorf("limits: cgroup v2: %w", err)
	}
	g.dir = ""
	return nil
}
