package testutil

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/mountinfo"
)

// sandboxInitArg0 is the name a sandbox's init runs under (the sandbox
// package's initArg0).
const sandboxInitArg0 = "airlock-sandbox-init"

// CheckNoSandboxLeft fails t if anything of the sandbox run id is left
// on the host: a sandbox init that is a child of this process (alive or
// a zombie; the kernel kills the rest of its pid namespace with it), a
// cgroup directory named for id, or a mount whose line names id.
func CheckNoSandboxLeft(t testing.TB, id string) {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and ')'.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(f) < 2 || f[1] != me {
			continue
		}
		// A zombie has no command line left: an init, re-executed from
		// /proc/self/exe, is named "exe".
		cmdline, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		arg0, _, _ := bytes.Cut(cmdline, []byte{0})
		if string(arg0) == sandboxInitArg0 || f[0] == "Z" && bytes.HasSuffix(stat[:i], []byte("(exe")) {
			t.Errorf("sandbox init %s (state %s), a child of the test, is left", p.Name(), f[0])
		}
	}
	CheckNoCgroupLeft(t, id)
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("testutil: %v", err)
	}
	mounts, err := mountinfo.Parse(b)
	if err != nil {
		t.Fatalf("testutil: %v", err)
	}
	for _, m := range mounts {
		if strings.Contains(m.Root+" "+m.Point+" "+m.Source, id) {
			t.Errorf("mount left in the host's table: %+v", m)
		}
	}
}

// CheckNoCgroupLeft fails t if a cgroup directory whose name holds id is
// left under /sys/fs/cgroup.
func CheckNoCgroupLeft(t testing.TB, id string) {
	t.Helper()
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Contains(d.Name(), id) {
			t.Errorf("cgroup %s left behind", path)
			return fs.SkipDir
		}
		if strings.Count(path, "/") > 8 {
			return fs.SkipDir
		}
		return nil
	})
}

// EmptyCgroups returns the cgroup directories, in the pids hierarchy of
// cgroup v1 or else the unified one, whose name holds id and that hold no
// process: what a sandbox whose init died without its teardown leaves.
// Unlike CheckNoCgroupLeft's, its answer is not disturbed by the live
// sandboxes of other tests, or of other users, on the same host.
func EmptyCgroups(id string) []string {
	dir := "/sys/fs/cgroup/pids"
	if _, err := os.Stat(dir); err != nil {
		dir = "/sys/fs/cgroup"
	}
	var out []string
	names, _ := filepath.Glob(filepath.Join(dir, "*"+id+"*"))
	for _, n := range names {
		if procs, err := os.ReadFile(filepath.Join(n, "cgroup.procs")); err == nil && len(bytes.TrimSpace(procs)) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// CheckNoEmptyCgroupLeft fails t if, within five seconds, a cgroup that
// EmptyCgroups(id) names and before did not is still there and empty
// (once its processes have had the time to die and be torn down).
func CheckNoEmptyCgroupLeft(t testing.TB, id string, before []string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left = left[:0]
		for _, n := range EmptyCgroups(id) {
			if !slices.Contains(before, n) {
				left = append(left, n)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, n := range left {
		t.Errorf("cgroup %s left behind, empty", n)
	}
}

// CheckNoProcessIn fails t if a process of the pid namespace pidns (as
// /proc/PID/ns/pid reads, "pid:[N]") is still alive after a few seconds:
// a process SIGKILLed with its namespace's init is gone only once the
// kernel has torn it down, a moment after its killer returns.
func CheckNoProcessIn(t testing.TB, pidns string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			if ns, err := os.Readlink("/proc/" + p.Name() + "/ns/pid"); err == nil && ns == pidns {
				left = append(left, p.Name())
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range left {
		t.Errorf("process %s of the sandbox's pid namespace survived", p)
	}
}

// StaleCanaries lists the start-up probe canary directories whose owner
// is gone (their lock is free), in the places airlock makes them and in
// parents: a dead airlock's leftovers that the next run, or a session's
// watchdog, should have swept.
func StaleCanaries(parents ...string) []string {
	var stale []string
	for _, parent := range append(parents, os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm", os.TempDir()) {
		dirs, _ := filepath.Glob(filepath.Join(parent, "airlock-canary-*"))
		for _, d := range dirs {
			f, err := os.Open(filepath.Join(d, ".owner"))
			if err != nil {
				continue
			}
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				stale = append(stale, d)
			}
			f.Close()
		}
	}
	return stale
}
