package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// runContained runs cfg and checks that nothing of it is left on the host
// afterwards: no process in its pid namespace, no cgroup directory.
func runContained(t *testing.T, cfg Config) (Result, string) {
	t.Helper()
	res, out, err := runWait(t, cfg)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return res, out
}

// runWait is runContained, returning Wait's error.
func runWait(t *testing.T, cfg Config) (Result, string, error) {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()) + "-" + strconv.Itoa(os.Getpid())
	}
	var out bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &out
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pidns, err := os.Readlink("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/ns/pid")
	if err != nil {
		s.Kill()
		t.Fatalf("read the init's pid namespace: %v", err)
	}
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatalf("Release: %v", err)
	}
	res, err := s.Wait()
	checkNoResidue(t, cfg.ID, pidns)
	return res, out.String(), err
}

// checkNoResidue fails the test if a process of the sandbox's pid
// namespace or a cgroup directory named for the run is left.
func checkNoResidue(t *testing.T, id, pidns string) {
	t.Helper()
	testutil.CheckNoProcessIn(t, pidns)
	testutil.CheckNoCgroupLeft(t, id)
}

func shellConfig(script string) Config {
	return Config{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Caps: testCaps()}
}

func TestContainMemoryBomb(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := payloadConfig("membomb")
	cfg.Caps.MemoryBytes = 64 << 20
	res, out := runContained(t, cfg)
	if res.KilledBy != "memory" || res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("result %+v (output %q), want killed by memory with SIGKILL", res, out)
	}
}

func TestContainForkBomb(t *testing.T) {
	testutil.RequireRoot(t)
	// The top shell waits while the bomb grows: it must not end the run
	// (and with it the bomb) before the tasks cap is reached.
	cfg := shellConfig("f() { f | f & }; f; sleep 5")
	cfg.Caps.Tasks = 32
	cfg.Caps.Wall = 10 * time.Second
	res, out := runContained(t, cfg)
	if res.KilledBy != "pids" {
		t.Fatalf("result %+v (output %q), want killed by pids", res, out)
	}
}

func TestContainCPUSpin(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := payloadConfig("spin")
	cfg.Caps.CPU = time.Second
	res, out := runContained(t, cfg)
	if res.KilledBy != "cpu" || res.Signal == 0 {
		t.Fatalf("result %+v (output %q), want killed by cpu", res, out)
	}
}

func TestContainSleeper(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := payloadConfig("sleep")
	cfg.Caps.Wall = time.Second
	res, out := runContained(t, cfg)
	if res.KilledBy != "wall" || res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("result %+v (output %q), want killed by wall with SIGKILL", res, out)
	}
}

func TestContainDiskFiller(t *testing.T) {
	testutil.RequireRoot(t)
	for _, dir := range []string{TmpDir, WorkspaceDir, FindingsDir, "/dev/shm"} {
		res, out := runContained(t, payloadConfig("fill", dir))
		if res.ExitCode != 3 || !strings.Contains(out, "no space left on device") {
			t.Errorf("%s: result %+v, output %q, want exit 3 and ENOSPC", dir, res, out)
		}
	}
}

func TestContainFileSizeLimit(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := Config{Path: "/bin/dd", Args: []string{"dd", "if=/dev/zero", "of=/tmp/big", "bs=1M", "count=64"}, Caps: testCaps()}
	res, out := runContained(t, cfg)
	if res.KilledBy != "disk" || res.Signal != int(syscall.SIGXFSZ) {
		t.Fatalf("result %+v (output %q), want killed by disk with SIGXFSZ", res, out)
	}
}

func TestContainFDExhaustion(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := payloadConfig("fds")
	cfg.Caps.OpenFiles = 64
	res, out := runContained(t, cfg)
	var n int
	var rest string
	if _, err := fmt.Sscan(out, &n, &rest); err != nil || res.ExitCode != 0 || n >= 64 || !strings.Contains(out, "too many open files") {
		t.Fatalf("result %+v, output %q, want fewer than 64 opens then EMFILE", res, out)
	}
}

func TestContainDaemon(t *testing.T) {
	testutil.RequireRoot(t)
	res, out := runContained(t, payloadConfig("daemon", "1000"))
	if res.ExitCode != 0 || !strings.Contains(out, "daemonized") {
		t.Fatalf("result %+v, output %q", res, out)
	}
	// checkNoResidue has shown the setsid sleeper dead.
}

// TestInGroup checks where the init and the target sit: in the group's
// directory of every cgroup hierarchy the group has one in, v1 and v2,
// although no cgroup.procs write placed them (place_linux.go).
func TestInGroup(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := shellConfig("cat /proc/self/cgroup")
	cfg.ID = "TestInGroup-" + strconv.Itoa(os.Getpid())
	group := "airlock-sandbox-" + cfg.ID
	var out bytes.Buffer
	cfg.Stdout = &out
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dirs := s.group.Dirs()
	if dirs.Empty() {
		s.Kill()
		t.Skip("this host gives the sandbox no cgroup")
	}
	// The kernel lists the init in each of the group's directories: the
	// whole init in the unified one, its main thread in each v1 one.
	pid := strconv.Itoa(s.cmd.Process.Pid)
	members := map[string]string{}
	if dirs.V2 != "" {
		members[filepath.Join(dirs.V2, "cgroup.procs")] = "v2"
	}
	for c, d := range dirs.V1 {
		members[filepath.Join(d, "tasks")] = c
	}
	for file, h := range members {
		if filepath.Base(filepath.Dir(file)) != group {
			t.Errorf("%s: the group's %s directory is not named for the sandbox", file, h)
		}
		lines, err := initproc.ReadLines(file)
		if err != nil || !slices.Contains(lines, pid) {
			t.Errorf("%s lists %q (%v), not the init %s", file, lines, err, pid)
		}
	}
	// And the init's own cgroup file agrees, hierarchy by hierarchy.
	lines, err := initproc.ReadLines("/proc/" + pid + "/task/" + pid + "/cgroup")
	if err != nil {
		s.Kill()
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var hs []string
		if parts[0] == "0" && parts[1] == "" && dirs.V2 != "" {
			hs = append(hs, "v2")
		}
		for _, c := range strings.Split(parts[1], ",") {
			if _, ok := dirs.V1[c]; ok {
				hs = append(hs, c)
			}
		}
		for _, h := range hs {
			seen[h] = true
			if filepath.Base(parts[2]) != group {
				t.Errorf("the init sits in %s, not the group, in hierarchy %q", parts[2], parts[1])
			}
		}
	}
	for _, h := range members {
		if !seen[h] {
			t.Errorf("/proc/%s/cgroup has no line for the group's %s hierarchy", pid, h)
		}
	}
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatal(err)
	}
	res, err := s.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v", res, err)
	}
	if p := res.Receipt["placement"]; strings.Contains(p, "limits.Place") || p == "" {
		t.Errorf("placement %q: the init did not get in without a cgroup.procs write", p)
	}
	// Inside its own cgroup namespace the target sees the group as its
	// root (v2, cloned into it) or as the group's directory (v1).
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && parts[2] != "/" && parts[2] != "/"+group && hasGroupController(parts[1]) {
			t.Errorf("the target sits in %q in hierarchy %q", parts[2], parts[1])
		}
	}
}

func hasGroupController(ctrls string) bool {
	for _, c := range strings.Split(ctrls, ",") {
		switch c {
		case "", "memory", "pids", "cpuacct", "freezer":
			return true
		}
	}
	return false
}

// TestTargetIsOOMVictim checks that a target starts as the OOM killer's
// first choice (oom_score_adj 1000) and the init keeps its own score: a
// memory bomb that has just started must not get the init killed in its
// place (it happened to a session step under the race detector, whose
// init is the larger process).
func TestTargetIsOOMVictim(t *testing.T) {
	testutil.RequireRoot(t)
	self, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	res, out, errOut := run(t, shellConfig("cat /proc/self/oom_score_adj /proc/1/oom_score_adj"))
	want := "1000\n" + string(self)
	if res.ExitCode != 0 || out != want {
		t.Fatalf("target and init scores %q (stderr %q), want %q", out, errOut, want)
	}
}
