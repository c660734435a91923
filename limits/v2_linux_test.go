package limits

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"golang.org/x/sys/unix"
)

// The v2 code path, tested on a cgroup2 mount of the test's own. cgroup2
// is one hierarchy however often it is mounted, so this is the host's
// unified hierarchy seen through a second mount point: on a hybrid host it
// has no memory or pids controller (they are bound to v1), and these tests
// then cover the directory, CLONE_INTO_CGROUP, cpu.stat accounting, the
// CPU watch, cgroup.kill, cgroup.freeze, the refusal of a required
// controller and the cleanup — but not writing memory.max or pids.max,
// which only a host with those controllers on v2 exercises.

// v2Layout mounts cgroup2 in a temporary directory and returns a v2-only
// layout on it; the mount is detached at cleanup, after the group's own
// cleanup (cleanups run last-registered first).
func v2Layout(t *testing.T) layout {
	t.Helper()
	testutil.RequireRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("airlock-test", dir, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Skipf("cannot mount cgroup2: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := parseProcCgroup(b)
	if err != nil || !pc.hasUnified {
		t.Fatalf("no unified entry in /proc/self/cgroup: %v", err)
	}
	return layout{mode: ModeV2, unified: dir, unifiedOwn: pc.unified, v1: map[string]string{}, v1Own: map[string]string{}}
}

// offered lists the controllers the mount's root offers.
func offered(t *testing.T, l layout) []string {
	b, err := os.ReadFile(filepath.Join(l.unified, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func TestV2PrivateMountGroup(t *testing.T) {
	l := v2Layout(t)
	g := newTestGroup(t, testCaps(), &l)
	if g.sys.v1 != nil || g.sys.v2 == nil {
		t.Fatalf("want a v2-only group, got v1=%v v2=%v", g.sys.v1 != nil, g.sys.v2 != nil)
	}
	if !strings.HasPrefix(g.sys.v2.dir, l.unified+"/") {
		t.Errorf("group %s not under the private mount %s", g.sys.v2.dir, l.unified)
	}
	fd, ok := g.Dir()
	if !ok || fd < 0 {
		t.Fatal("Dir() = false for a v2 group")
	}
	rec := g.Receipt()
	if rec[ControlKill] != "cgroup v2 cgroup.kill" {
		t.Errorf("Receipt[kill] = %q", rec[ControlKill])
	}
	if rec[ControlCPU] != "cgroup v2 cpu.stat usage_usec watch + RLIMIT_CPU" {
		t.Errorf("Receipt[cpu] = %q", rec[ControlCPU])
	}
	if !g.Provides(RequireCgroup) || !g.Provides(RequireCgroupCPU) {
		t.Error("a v2 group must provide cgroup and cgroup-cpu")
	}
	offer := offered(t, l)
	if slices.Contains(offer, "memory") {
		if !g.Provides(RequireCgroupMemory) || !strings.HasPrefix(rec[ControlMemory], "cgroup v2 memory.max") {
			t.Errorf("memory offered but Receipt[memory] = %q", rec[ControlMemory])
		}
		if v, err := readInt(g.sys.v2.dir, "memory.max"); err != nil || v != testCaps().MemoryBytes {
			t.Errorf("memory.max = %d, %v", v, err)
		}
	} else {
		if g.Provides(RequireCgroupMemory) || rec[ControlMemory] != "RLIMIT_DATA per process (no memory cgroup: kernel memory, such as TCP socket buffers between the sandbox's own sockets, is counted by nothing)" {
			t.Errorf("no memory controller offered but Receipt[memory] = %q", rec[ControlMemory])
		}
		if !slices.ContainsFunc(g.Rlimits(), func(r Rlimit) bool { return r.Name == "RLIMIT_DATA" }) {
			t.Error("no memory cgroup and no RLIMIT_DATA")
		}
	}
	if slices.Contains(offer, "pids") {
		if v, err := readInt(g.sys.v2.dir, "pids.max"); err != nil || v != testCaps().Tasks {
			t.Errorf("pids.max = %d, %v", v, err)
		}
	} else if rec[ControlTasks] != "RLIMIT_NPROC per user namespace and uid (no pids cgroup)" {
		t.Errorf("no pids controller offered but Receipt[tasks] = %q", rec[ControlTasks])
	}
}

func TestV2CloneIntoCgroupAndCPUWatch(t *testing.T) {
	l := v2Layout(t)
	caps := testCaps()
	caps.CPU = time.Second
	g := newTestGroup(t, caps, &l)
	w := watch(g)
	// No Place: CLONE_INTO_CGROUP alone must put the child in the group
	// before it runs anything.
	c := start(t, g, "exec", startOpt{noPlace: true, noRlimits: true},
		"/bin/sh", "-c", "while :; do :; done & while :; do :; done & wait")
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/cgroup")
	if err != nil || !strings.Contains(string(b), "0::"+filepath.Join(l.unifiedOwn, "airlock-"+g.name)) {
		t.Errorf("child's cgroup = %q (%v), want the group", b, err)
	}
	if k := w.tripped(t, 60*time.Second); k != KilledByCPU {
		t.Errorf("onKill(%q), want %q", k, KilledByCPU)
	}
	requireEmpty(t, g)
	st, _ := g.Stats()
	if st.CPU < caps.CPU {
		t.Errorf("Stats.CPU = %v, want >= %v", st.CPU, caps.CPU)
	}
}

func TestV2KillAllOrphans(t *testing.T) {
	for _, mech := range []string{"cgroup.kill", "cgroup.freeze"} {
		t.Run(mech, func(t *testing.T) {
			l := v2Layout(t)
			g := newTestGroup(t, testCaps(), &l)
			if mech == "cgroup.freeze" {
				g.sys.v2.killf = false // as on a kernel before 5.14
			}
			c := start(t, g, "orphans", startOpt{noRlimits: true})
			c.wait(t, 60*time.Second)
			var fds []int
			for _, f := range strings.Fields(c.stdout.String()) {
				pid, _ := strconv.Atoi(f)
				fd, err := unix.PidfdOpen(pid, 0)
				if err != nil {
					t.Fatalf("pidfd_open %q: %v", f, err)
				}
				defer unix.Close(fd)
				fds = append(fds, fd)
			}
			if len(fds) != 2 {
				t.Fatalf("orphans payload printed %q (%v)", c.stdout.String(), c.err)
			}
			if err := g.KillAll(); err != nil {
				t.Fatalf("KillAll: %v", err)
			}
			for _, fd := range fds {
				if !pidfdExited(fd, 5*time.Second) {
					t.Errorf("an orphan survived KillAll by %s", mech)
				}
			}
			requireEmpty(t, g)
		})
	}
}

func TestV2RequireMissingControllerRefused(t *testing.T) {
	l := v2Layout(t)
	if slices.Contains(offered(t, l), "memory") {
		t.Skip("this host's v2 offers memory")
	}
	name := testName(t)
	g, err := newGroup(testCaps(), Options{Name: name, Require: []string{"seccomp", RequireCgroupMemory}}, &l)
	if g != nil || err == nil {
		t.Fatal("New succeeded although the policy requires cgroup-memory")
	}
	var re *RequireError
	if !errors.As(err, &re) || !errors.Is(err, ErrUnavailable) || !slices.Equal(re.Missing, []string{RequireCgroupMemory}) {
		t.Fatalf("err = %v, want a RequireError for cgroup-memory only", err)
	}
	if !strings.Contains(err.Error(), "RLIMIT_DATA") {
		t.Errorf("error %q does not say what was found instead", err)
	}
	assertGone(t, []string{filepath.Join(l.unified, l.unifiedOwn, "airlock-"+name)})
}

func TestV2ExplicitParent(t *testing.T) {
	l := v2Layout(t)
	parent := "/airlock-test-parent-" + randomName()
	pdir := filepath.Join(l.unified, parent)
	if err := os.Mkdir(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Rmdir(pdir) })
	g, err := newGroup(testCaps(), Options{Name: testName(t), Parent: parent}, &l)
	if err != nil {
		t.Fatal(err)
	}
	dirs := g.sys.dirs()
	if len(dirs) != 1 || filepath.Dir(dirs[0]) != pdir {
		t.Errorf("group dirs %v, want one under %s", dirs, pdir)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, dirs)
}
