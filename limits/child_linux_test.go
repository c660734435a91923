package limits

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readLimit reads one value of a child's directory.
func readLimit(t *testing.T, dir, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestChildLimits: a child's caps land in its own v1 directories, each
// at most what the session has left; they can be lowered and raised again
// (memory.memsw first when raised); Delete removes the directories, and a
// child left behind goes with its group.
func TestChildLimits(t *testing.T) {
	l := hostLayoutFor(t)
	if l.v1["memory"] == "" || l.v1["pids"] == "" {
		t.Skip("no cgroup v1 memory and pids")
	}
	g := newTestGroup(t, testCaps(), &l)
	c, err := g.NewChild("step-1")
	if err != nil {
		t.Fatal(err)
	}
	dirs, parents := c.Dirs()
	for _, ctl := range childControllers {
		if filepath.Dir(dirs[ctl]) != g.sys.v1.dirs[ctl] || parents[ctl] != g.sys.v1.dirs[ctl] || filepath.Base(dirs[ctl]) != "airlock-step-1" {
			t.Fatalf("child %s directory %q under %q, want airlock-step-1 under the group's %q", ctl, dirs[ctl], parents[ctl], g.sys.v1.dirs[ctl])
		}
	}
	memsw := exists(dirs["memory"], "memory.memsw.limit_in_bytes")
	for _, want := range []ChildCaps{{64 << 20, 16}, {32 << 20, 8}, {128 << 20, 32}, {1 << 40, 1 << 20}} {
		if err := c.Limit(want); err != nil {
			t.Fatalf("Limit(%+v): %v", want, err)
		}
		got := c.Caps()
		// Less the kernel's own objects for the child group, which the
		// session's memory group is charged for: well under 1 MiB.
		if wantMem := min(want.MemoryBytes, testCaps().MemoryBytes); got.MemoryBytes > wantMem || got.MemoryBytes < wantMem-1<<20 || got.Tasks > min(want.Tasks, testCaps().Tasks) {
			t.Errorf("Limit(%+v): caps %+v, want at most the session's %d bytes (less under 1 MiB) and %d tasks", want, got, testCaps().MemoryBytes, testCaps().Tasks)
		}
		if v := readLimit(t, dirs["memory"], "memory.limit_in_bytes"); v != strconv.FormatInt(got.MemoryBytes, 10) {
			t.Errorf("memory.limit_in_bytes %s, want %d", v, got.MemoryBytes)
		}
		if memsw {
			if v := readLimit(t, dirs["memory"], "memory.memsw.limit_in_bytes"); v != strconv.FormatInt(got.MemoryBytes, 10) {
				t.Errorf("memory.memsw.limit_in_bytes %s, want %d", v, got.MemoryBytes)
			}
		}
		if v := readLimit(t, dirs["pids"], "pids.max"); v != strconv.FormatInt(got.Tasks, 10) {
			t.Errorf("pids.max %s, want %d", v, got.Tasks)
		}
		if len(c.Rlimits()) != 0 || !strings.Contains(c.Receipt()[ControlMemory], "step's own group") {
			t.Errorf("rlimits %v, receipt %v: want the cgroups'", c.Rlimits(), c.Receipt())
		}
	}
	if err := c.Delete(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, []string{dirs["memory"], dirs["pids"]})
	if _, err := g.NewChild("../x"); err == nil {
		t.Error("NewChild took a name with a slash")
	}
	left, err := g.NewChild("step-2")
	if err != nil {
		t.Fatal(err)
	}
	leftDirs, _ := left.Dirs()
	groupDirs := g.sys.dirs()
	if err := g.Delete(); err != nil {
		t.Fatalf("Delete of a group holding a step group: %v", err)
	}
	assertGone(t, append(groupDirs, leftDirs["memory"], leftDirs["pids"]))
}

// TestChildWithoutCgroup: where the session's group has no cgroup, a
// child holds its caps with rlimits, at most the session's, and says so.
func TestChildWithoutCgroup(t *testing.T) {
	g := newTestGroup(t, testCaps(), &layout{mode: ModeNone})
	c, err := g.NewChild("step-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Limit(ChildCaps{MemoryBytes: 1 << 50, Tasks: 5}); err != nil {
		t.Fatal(err)
	}
	rl := map[string]Rlimit{}
	for _, r := range c.Rlimits() {
		rl[r.Name] = r
	}
	if d := rl["RLIMIT_DATA"]; d.Max != uint64(testCaps().MemoryBytes) || d.Cur != d.Max {
		t.Errorf("RLIMIT_DATA %+v, want the session's %d", d, testCaps().MemoryBytes)
	}
	if n := rl["RLIMIT_NPROC"]; n.Max != 5 || n.Cur != 5 {
		t.Errorf("RLIMIT_NPROC %+v, want 5", n)
	}
	for _, k := range []string{ControlMemory, ControlTasks} {
		if r := c.Receipt()[k]; !strings.Contains(r, "RLIMIT_") || !strings.Contains(r, "no cgroup") {
			t.Errorf("receipt %s = %q", k, r)
		}
	}
	if err := c.Delete(); err != nil {
		t.Error(err)
	}
}
