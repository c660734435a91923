package limits

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"golang.org/x/sys/unix"
)

// hostLayoutFor returns the host's layout, skipping when it has no v1
// memory controller (these tests are written for the hybrid CI hosts; the
// v2 path is tested on a private mount in v2_linux_test.go).
func hostLayoutFor(t *testing.T) layout {
	t.Helper()
	testutil.RequireRoot(t)
	l, err := hostLayout()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.v1["memory"]; !ok {
		t.Skipf("host has no v1 memory controller (mode %s)", l.mode)
	}
	return l
}

func TestLimitsWrittenAndReadBack(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.MemoryBytes = 96 << 20
	caps.Tasks = 37
	g := newTestGroup(t, caps, &l)

	mem := g.sys.v1.dirs["memory"]
	wantParent := filepath.Join(l.v1["memory"], l.v1Own["memory"])
	if filepath.Dir(mem) != wantParent {
		t.Errorf("memory group %s is not under the caller's own memory cgroup %s", mem, wantParent)
	}
	for _, f := range []struct{ dir, file string }{
		{mem, "memory.limit_in_bytes"},
		{mem, "memory.memsw.limit_in_bytes"},
	} {
		if !exists(f.dir, f.file) {
			continue
		}
		if v, err := readInt(f.dir, f.file); err != nil || v != caps.MemoryBytes {
			t.Errorf("%s = %d, %v; want %d", f.file, v, err, caps.MemoryBytes)
		}
	}
	if v, err := readInt(g.sys.v1.dirs["pids"], "pids.max"); err != nil || v != caps.Tasks {
		t.Errorf("pids.max = %d, %v; want %d", v, err, caps.Tasks)
	}
	if kv, err := readKV(mem, "memory.oom_control"); err != nil || kv["oom_kill_disable"] != 0 {
		t.Errorf("memory.oom_control = %v, %v: the kernel's OOM killer must stay on", kv, err)
	}
	for _, r := range RequireNames {
		if !g.Provides(r) {
			t.Errorf("Provides(%q) = false on a root hybrid host", r)
		}
	}
	rec := g.Receipt()
	for k, want := range map[string]string{
		ControlMemory:    "cgroup v1 memory.limit_in_bytes",
		ControlTasks:     "cgroup v1 pids.max",
		ControlCPU:       "cgroup v1 cpuacct.usage watch + RLIMIT_CPU",
		ControlOpenFiles: "RLIMIT_NOFILE",
		ControlDisk:      "RLIMIT_FSIZE (+ tmpfs size by sandbox)",
	} {
		if !strings.HasPrefix(rec[k], want) {
			t.Errorf("Receipt[%s] = %q, want prefix %q", k, rec[k], want)
		}
	}
	if l.unified != "" {
		if _, ok := g.Dir(); !ok {
			t.Error("Dir() = false on a host with a unified hierarchy")
		}
		if rec[ControlKill] != "cgroup v2 cgroup.kill" {
			t.Errorf("Receipt[kill] = %q, want cgroup v2 cgroup.kill", rec[ControlKill])
		}
	}
	names := map[string]Rlimit{}
	for _, r := range g.Rlimits() {
		names[r.Name] = r
	}
	if r := names["RLIMIT_NOFILE"]; r.Cur != uint64(caps.OpenFiles) || r.Max != uint64(caps.OpenFiles) {
		t.Errorf("RLIMIT_NOFILE = %+v, want %d", r, caps.OpenFiles)
	}
	if r := names["RLIMIT_CPU"]; r.Cur != 30 || r.Max != 31 {
		t.Errorf("RLIMIT_CPU = %+v, want 30/31", r)
	}
	if _, ok := names["RLIMIT_DATA"]; ok {
		t.Error("RLIMIT_DATA set although the memory cgroup holds the cap")
	}
	if _, ok := names["RLIMIT_NPROC"]; ok {
		t.Error("RLIMIT_NPROC set although the pids cgroup holds the cap")
	}
}

func TestNameInUseRefused(t *testing.T) {
	l := hostLayoutFor(t)
	g := newTestGroup(t, testCaps(), &l)
	_, err := newGroup(testCaps(), Options{Name: g.name}, &l)
	if err == nil || !errors.Is(err, os.ErrExist) {
		t.Fatalf("second New with the same name: err = %v, want EEXIST", err)
	}
	// The first group must be intact.
	for _, d := range g.sys.dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("first group's %s damaged: %v", d, err)
		}
	}
}

func TestMissingParentRefused(t *testing.T) {
	l := hostLayoutFor(t)
	_, err := newGroup(testCaps(), Options{Name: testName(t), Parent: "/airlock-no-such-parent-" + randomName()}, &l)
	if err == nil {
		t.Fatal("New under a missing parent succeeded")
	}
}

func TestMemoryBombOOMKilled(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.MemoryBytes = 64 << 20
	g := newTestGroup(t, caps, &l)
	w := watch(g)
	c := start(t, g, "membomb", startOpt{})
	c.wait(t, 60*time.Second)
	w.stop()
	if sig := c.signal(); sig != syscall.SIGKILL {
		t.Errorf("memory bomb ended by %v (err %v), want SIGKILL; stderr %q", sig, c.err, c.stderr.String())
	}
	if k := g.KilledBy(); k != KilledByMemory {
		t.Errorf("KilledBy = %q, want %q", k, KilledByMemory)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.OOMKills < 1 {
		t.Errorf("Stats.OOMKills = %d, want >= 1", st.OOMKills)
	}
	// The kernel may force a charge past the limit (an allocation that
	// must not fail, the OOM kill itself): a few pages, never more than
	// slack.
	const slack = 1 << 20
	if st.PeakMemoryBytes > caps.MemoryBytes+slack || st.PeakMemoryBytes < caps.MemoryBytes/2 {
		t.Errorf("Stats.PeakMemoryBytes = %d, want in (%d, %d+%d]", st.PeakMemoryBytes, caps.MemoryBytes/2, caps.MemoryBytes, slack)
	}
	requireEmpty(t, g)
}

func TestForkBombContained(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.Tasks = 32
	g := newTestGroup(t, caps, &l)
	w := watch(g)
	start(t, g, "exec", startOpt{}, "/bin/sh", "-c", "b() { b | b & }; b")
	if k := w.tripped(t, 60*time.Second); k != KilledByPids {
		t.Errorf("onKill(%q), want %q", k, KilledByPids)
	}
	if k := g.KilledBy(); k != KilledByPids {
		t.Errorf("KilledBy = %q, want %q", k, KilledByPids)
	}
	requireEmpty(t, g)
	st, _ := g.Stats()
	if st.TasksLimitHits < 1 || st.TasksPeak > caps.Tasks {
		t.Errorf("Stats = %+v: want limit hits >= 1 and peak <= %d", st, caps.Tasks)
	}
}

func TestThreadBombContained(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.Tasks = 40
	g := newTestGroup(t, caps, &l)
	w := watch(g)
	c := start(t, g, "threads", startOpt{})
	c.wait(t, 60*time.Second)
	w.stop()
	if k := g.KilledBy(); k != KilledByPids {
		t.Errorf("KilledBy = %q, want %q (child: %v)", k, KilledByPids, c.err)
	}
	st, _ := g.Stats()
	if st.TasksPeak > caps.Tasks {
		t.Errorf("TasksPeak = %d > cap %d", st.TasksPeak, caps.Tasks)
	}
	requireEmpty(t, g)
}

func TestCPUCapCountsTheWholeGroup(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.CPU = 1 * time.Second
	g := newTestGroup(t, caps, &l)
	w := watch(g)
	// Two processes, each under the cap on its own: only the group's
	// total trips it (RLIMIT_CPU alone, per process, would not).
	start(t, g, "exec", startOpt{}, "/bin/sh", "-c", "while :; do :; done & while :; do :; done & wait")
	if k := w.tripped(t, 60*time.Second); k != KilledByCPU {
		t.Errorf("onKill(%q), want %q", k, KilledByCPU)
	}
	requireEmpty(t, g)
	st, _ := g.Stats()
	if st.CPU < caps.CPU {
		t.Errorf("Stats.CPU = %v, want >= %v", st.CPU, caps.CPU)
	}
}

func TestWallClockKills(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.Wall = 300 * time.Millisecond
	g := newTestGroup(t, caps, &l)
	w := watch(g)
	c := start(t, g, "sleep", startOpt{})
	if k := w.tripped(t, 60*time.Second); k != KilledByWall {
		t.Errorf("onKill(%q), want %q", k, KilledByWall)
	}
	c.wait(t, 10*time.Second)
	if sig := c.signal(); sig != syscall.SIGKILL {
		t.Errorf("sleeper ended by %v, want SIGKILL", sig)
	}
	requireEmpty(t, g)
}

func TestOpenFilesCap(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.OpenFiles = 64
	g := newTestGroup(t, caps, &l)
	c := start(t, g, "fds", startOpt{})
	c.wait(t, 60*time.Second)
	var n int
	var msg string
	fields := strings.SplitN(strings.TrimSpace(c.stdout.String()), " ", 2)
	if len(fields) == 2 {
		n, _ = strconv.Atoi(fields[0])
		msg = fields[1]
	}
	if msg != unix.EMFILE.Error() || n < 1 || n >= 64 {
		t.Errorf("fd exhaustion: opened %d, stopped by %q (out %q); want EMFILE below 64", n, msg, c.stdout.String())
	}
	if g.KilledBy() != "" {
		t.Errorf("KilledBy = %q for a refused open", g.KilledBy())
	}

	// A program run after the rlimits sees them too (Go's exec must not
	// restore its own RLIMIT_NOFILE).
	c = start(t, g, "exec", startOpt{}, "/bin/sh", "-c", "ulimit -n; ulimit -c")
	c.wait(t, 60*time.Second)
	if got := strings.Fields(c.stdout.String()); len(got) != 2 || got[0] != "64" || got[1] != "0" {
		t.Errorf("after exec: ulimit -n, -c = %q, want 64 and 0", got)
	}
}

func TestOpenFilesAboveHardLimitLowered(t *testing.T) {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &cur); err != nil || cur.Max == unix.RLIM_INFINITY {
		t.Skip("no finite RLIMIT_NOFILE hard limit here")
	}
	caps := testCaps()
	caps.OpenFiles = int64(cur.Max) + 1000
	rec := map[string]string{}
	rl := buildRlimits(caps, map[string]bool{}, rec)
	for _, r := range rl {
		if r.Name == "RLIMIT_NOFILE" && (r.Max != cur.Max || r.Cur != cur.Max) {
			t.Errorf("RLIMIT_NOFILE = %+v, want lowered to the hard limit %d", r, cur.Max)
		}
	}
	if !strings.Contains(rec[ControlOpenFiles], "lowered to the host's hard limit") {
		t.Errorf("receipt %q does not say the cap was lowered", rec[ControlOpenFiles])
	}
}

func TestFileSizeCap(t *testing.T) {
	l := hostLayoutFor(t)
	caps := testCaps()
	caps.DiskWriteBytes = 1 << 20
	g := newTestGroup(t, caps, &l)
	dir := t.TempDir()

	// A program that takes SIGXFSZ's default action dies of it.
	file := filepath.Join(dir, "big")
	c := start(t, g, "exec", startOpt{}, "/bin/sh", "-c", "exec head -c 4194304 /dev/zero > "+file)
	c.wait(t, 60*time.Second)
	sig := c.signal()
	if sig != syscall.SIGXFSZ {
		t.Errorf("writer ended by %v (%v), want SIGXFSZ", sig, c.err)
	}
	if k := SignalCause(sig, 0, caps.CPU); k != KilledByDisk {
		t.Errorf("SignalCause(%v) = %q, want %q", sig, k, KilledByDisk)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != caps.DiskWriteBytes {
		t.Errorf("file size %v, %v; want exactly %d", fi.Size(), err, caps.DiskWriteBytes)
	}

	// One that ignores it (the Go runtime does) gets EFBIG instead.
	file = filepath.Join(dir, "big2")
	c = start(t, g, "fsize", startOpt{}, file)
	c.wait(t, 60*time.Second)
	if !strings.Contains(c.stdout.String(), unix.EFBIG.Error()) {
		t.Errorf("Go writer: %q (%v), want %q", c.stdout.String(), c.err, unix.EFBIG.Error())
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != caps.DiskWriteBytes {
		t.Errorf("file size %v, %v; want exactly %d", fi.Size(), err, caps.DiskWriteBytes)
	}
}

func TestKillAllOrphansAndDaemons(t *testing.T) {
	l := hostLayoutFor(t)
	g := newTestGroup(t, testCaps(), &l)
	c := start(t, g, "orphans", startOpt{})
	c.wait(t, 60*time.Second)
	if c.err != nil {
		t.Fatalf("orphans payload: %v, stderr %q", c.err, c.stderr.String())
	}
	var fds []int
	for _, f := range strings.Fields(c.stdout.String()) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("orphans payload printed %q", c.stdout.String())
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd_open %d: %v", pid, err)
		}
		defer unix.Close(fd)
		if !inGroup(pid, g) {
			t.Fatalf("orphan %d is not in the group", pid)
		}
		fds = append(fds, fd)
	}
	if len(fds) != 2 {
		t.Fatalf("want 2 orphans, got %q", c.stdout.String())
	}
	if err := g.KillAll(); err != nil {
		t.Fatalf("KillAll: %v", err)
	}
	for _, fd := range fds {
		if !pidfdExited(fd, 5*time.Second) {
			t.Error("an orphan survived KillAll")
		}
	}
	requireEmpty(t, g)
}

func TestKillAllV1FreezerOnly(t *testing.T) {
	l := hostLayoutFor(t)
	if _, ok := l.v1["freezer"]; !ok {
		t.Skip("no v1 freezer")
	}
	l.unified, l.unifiedOwn = "", "" // a v1-only host
	caps := testCaps()
	caps.Tasks = 48
	g := newTestGroup(t, caps, &l)
	if got := g.Receipt()[ControlKill]; got != "cgroup v1 freezer (freeze, SIGKILL, thaw)" {
		t.Errorf("Receipt[kill] = %q", got)
	}
	if _, ok := g.Dir(); ok {
		t.Error("Dir() = true on a v1-only layout")
	}
	// A fork bomb running flat out, no watch: KillAll alone must empty it.
	start(t, g, "exec", startOpt{}, "/bin/sh", "-c", "b() { b | b & }; b")
	time.Sleep(300 * time.Millisecond)
	if err := g.KillAll(); err != nil {
		t.Fatalf("KillAll: %v", err)
	}
	requireEmpty(t, g)
}

func TestDeleteKillsWhatIsLeftAndIsIdempotent(t *testing.T) {
	l := hostLayoutFor(t)
	g, err := newGroup(testCaps(), Options{Name: testName(t)}, &l)
	if err != nil {
		t.Fatal(err)
	}
	dirs := g.sys.dirs()
	c := start(t, g, "sleep", startOpt{})
	if err := g.Delete(); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	c.wait(t, 10*time.Second)
	assertGone(t, dirs)
	if err := g.Delete(); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

func TestPlaceInvalidPid(t *testing.T) {
	l := hostLayoutFor(t)
	g := newTestGroup(t, testCaps(), &l)
	if err := g.Place(0); err == nil {
		t.Error("Place(0) succeeded")
	}
	if err := g.Place(-1); err == nil {
		t.Error("Place(-1) succeeded")
	}
}

func TestDetectHost(t *testing.T) {
	l := hostLayoutFor(t)
	info := Detect()
	if info.Mode != l.mode || info.Euid != 0 {
		t.Errorf("Detect() mode %s euid %d; layout mode %s", info.Mode, info.Euid, l.mode)
	}
	byName := map[string]Controller{}
	for _, c := range info.Controllers {
		byName[c.Name] = c
	}
	if c := byName["memory"]; c.Version != 1 || !c.Usable || c.Path != l.v1Own["memory"] || c.File != "memory.limit_in_bytes" {
		t.Errorf("memory = %+v", c)
	}
	if c := byName["cpu"]; c.Version != 1 || c.File != "cpuacct.usage" || !c.Usable {
		t.Errorf("cpu = %+v", c)
	}
	if l.unified != "" && (info.UnifiedMount != l.unified || !info.CgroupKill) {
		t.Errorf("unified = %q, cgroup.kill %v", info.UnifiedMount, info.CgroupKill)
	}
}

func TestDetectPrivateV2(t *testing.T) {
	l := v2Layout(t)
	info := detect(l, 0)
	for _, c := range info.Controllers {
		if c.Version != 2 {
			t.Errorf("%s: version %d on a v2 layout", c.Name, c.Version)
		}
		switch c.Name {
		case "cpu", "freezer":
			if !c.Usable {
				t.Errorf("%s not usable on v2 as root: %s", c.Name, c.Why)
			}
		case "memory", "pids":
			if want := slices.Contains(offered(t, l), c.Name); c.Usable != want {
				t.Errorf("%s usable = %v, offered %v (%s)", c.Name, c.Usable, want, c.Why)
			}
		}
	}
}

func TestConcurrentWatchStatsAndDelete(t *testing.T) {
	l := hostLayoutFor(t)
	g, err := newGroup(testCaps(), Options{Name: testName(t)}, &l)
	if err != nil {
		t.Fatal(err)
	}
	dirs := g.sys.dirs()
	c := start(t, g, "sleep", startOpt{})
	w := watch(g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			_, _ = g.Stats()
			_, _ = g.Dir()
		}
	}()
	if err := g.Delete(); err != nil {
		t.Errorf("Delete: %v", err)
	}
	<-done
	w.stop()
	c.wait(t, 10*time.Second)
	assertGone(t, dirs)
	if k := g.KilledBy(); k != "" {
		t.Errorf("KilledBy = %q after a plain Delete", k)
	}
}
