package limits

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestDirsAreTheGroups checks Dirs on the host, through New: every
// directory exists, is named for the group and is one of those Delete
// removes; the map is the caller's copy; after Delete there are none.
func TestDirsAreTheGroups(t *testing.T) {
	testutil.RequireRoot(t)
	name := testName(t)
	g, err := New(testCaps(), Options{Name: name})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	made := g.sys.dirs()
	t.Cleanup(func() {
		if err := g.Delete(); err != nil {
			t.Errorf("Delete: %v", err)
		}
		assertGone(t, made)
	})
	d := g.Dirs()
	if d.Empty() {
		t.Skip("the host gives root no cgroup")
	}
	l, err := hostLayout()
	if err != nil {
		t.Fatal(err)
	}
	if (l.unified != "") != (d.V2 != "") {
		t.Errorf("Dirs().V2 = %q with the unified hierarchy at %q", d.V2, l.unified)
	}
	var all []string
	if d.V2 != "" {
		all = append(all, d.V2)
	}
	for c, dir := range d.V1 {
		if !slices.Contains(v1Controllers, c) {
			t.Errorf("Dirs().V1 has controller %q", c)
		}
		if mount := l.v1[c]; !strings.HasPrefix(dir, mount+"/") {
			t.Errorf("Dirs().V1[%s] = %s, not under its hierarchy %s", c, dir, mount)
		}
		all = append(all, dir)
	}
	for _, dir := range all {
		if filepath.Base(dir) != "airlock-"+name {
			t.Errorf("%s is not the group's directory airlock-%s", dir, name)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", dir, err)
		}
		if !slices.Contains(made, dir) {
			t.Errorf("%s is not one of the group's directories %v", dir, made)
		}
	}
	if len(all) != len(made) {
		t.Errorf("Dirs() lists %d directories, the group has %d", len(all), len(made))
	}
	for c := range d.V1 {
		d.V1[c] = "/tmp"
	}
	if again := g.Dirs(); slices.Contains(slices.Collect(maps.Values(again.V1)), "/tmp") {
		t.Error("Dirs() shares its map with the group")
	}
	if err := g.Delete(); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if after := g.Dirs(); !after.Empty() {
		t.Errorf("Dirs() after Delete = %+v, want none", after)
	}
}

// TestFreezeThaw freezes a spinning process with the group's own freezer,
// on the host (cgroup.freeze on the unified hierarchy), on a v1-only
// layout (the v1 freezer) and on a private cgroup2 mount: while frozen it
// gets no CPU time; thawed, it spins again; Delete kills it frozen.
func TestFreezeThaw(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout func(t *testing.T) layout
		want   func(d GroupDirs) string // the mechanism
	}{
		{"host", hostLayoutFor, nil},
		{"v1-only", func(t *testing.T) layout {
			l := hostLayoutFor(t)
			if _, ok := l.v1["freezer"]; !ok {
				t.Skip("no v1 freezer")
			}
			l.unified, l.unifiedOwn = "", ""
			return l
		}, func(d GroupDirs) string { return "cgroup v1 " + filepath.Join(d.V1["freezer"], "freezer.state") }},
		{"v2-private", v2Layout, func(d GroupDirs) string { return "cgroup v2 " + filepath.Join(d.V2, "cgroup.freeze") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.layout(t)
			g := newTestGroup(t, testCaps(), &l)
			d := g.Dirs()
			want := tc.want
			if want == nil {
				want = func(d GroupDirs) string {
					if d.V2 != "" {
						return "cgroup v2 " + filepath.Join(d.V2, "cgroup.freeze")
					}
					return "cgroup v1 " + filepath.Join(d.V1["freezer"], "freezer.state")
				}
			}
			c := start(t, g, "spin", startOpt{noRlimits: true})
			pid := c.cmd.Process.Pid
			mech, err := g.Freeze()
			if err != nil {
				t.Fatalf("Freeze: %v", err)
			}
			if mech != want(d) {
				t.Errorf("Freeze() = %q, want %q", mech, want(d))
			}
			if grew := cpuGrows(t, pid); grew {
				t.Error("a frozen process got CPU time")
			}
			if err := g.Thaw(); err != nil {
				t.Fatalf("Thaw: %v", err)
			}
			if grew := cpuGrows(t, pid); !grew {
				t.Error("a thawed process got no CPU time")
			}
			if err := g.Thaw(); err != nil {
				t.Errorf("a second Thaw: %v", err)
			}
			if _, err := g.Freeze(); err != nil {
				t.Fatalf("Freeze again: %v", err)
			}
			if err := g.Delete(); err != nil {
				t.Fatalf("Delete of a frozen group: %v", err)
			}
			c.wait(t, 10*time.Second)
			if err := g.Thaw(); err != nil {
				t.Errorf("Thaw after Delete: %v", err)
			}
		})
	}
}

// TestFreezeWithoutCgroup: a group without any cgroup has no freezer, and
// Freeze says so without touching anything.
func TestFreezeWithoutCgroup(t *testing.T) {
	g := newTestGroup(t, testCaps(), &layout{mode: ModeNone, v1: map[string]string{}, v1Own: map[string]string{}})
	if d := g.Dirs(); !d.Empty() {
		t.Errorf("Dirs() = %+v without a cgroup", d)
	}
	if mech, err := g.Freeze(); !errors.Is(err, ErrNoFreezer) || mech != "" {
		t.Errorf("Freeze() = %q, %v; want ErrNoFreezer", mech, err)
	}
	if err := g.Thaw(); err != nil {
		t.Errorf("Thaw of an unfrozen group: %v", err)
	}
}

// cpuGrows reports whether pid's CPU time grows over 300ms.
func cpuGrows(t *testing.T, pid int) bool {
	t.Helper()
	before := cpuTicks(t, pid)
	time.Sleep(300 * time.Millisecond)
	return cpuTicks(t, pid) > before
}

// cpuTicks reads utime+stime of pid from /proc/pid/stat.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // from the state on
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}
