package limits

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The rootless fallback, tested for real: a root test re-runs this test
// binary as uid 65534, where TestRootlessChild does the work.

const envRootlessChild = "LIMITS_ROOTLESS_CHILD"

func TestRootlessFallback(t *testing.T) {
	name := testName(t)
	testutil.RunTestAsNobody(t, "TestRootlessChild", envRootlessChild+"="+name)
	// Nothing was made anywhere.
	l, err := hostLayout()
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for c, m := range l.v1 {
		dirs = append(dirs, filepath.Join(m, l.v1Own[c], "airlock-"+name))
	}
	if l.unified != "" {
		dirs = append(dirs, filepath.Join(l.unified, l.unifiedOwn, "airlock-"+name))
	}
	assertGone(t, dirs)
}

// TestRootlessChild runs only as the child of TestRootlessFallback.
func TestRootlessChild(t *testing.T) {
	name := os.Getenv(envRootlessChild)
	if name == "" {
		t.Skip("run by TestRootlessFallback as uid 65534")
	}
	testutil.RequireNonRoot(t)
	caps := testCaps()
	caps.Wall = 300 * time.Millisecond

	// A policy that requires a cgroup mechanism is refused, and says why.
	_, err := New(caps, Options{Name: name, Require: []string{RequireCgroupMemory, RequireCgroupPids}})
	var re *RequireError
	if !errors.As(err, &re) || !errors.Is(err, ErrUnavailable) || len(re.Missing) != 2 {
		t.Fatalf("New with require: err = %v, want a RequireError for 2 mechanisms", err)
	}
	if !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("RequireError %q does not give the cause", err)
	}

	// Without one, New falls back and says so: it never fails open.
	g, err := New(caps, Options{Name: name})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer g.Delete()
	for _, r := range RequireNames {
		if g.Provides(r) {
			t.Errorf("Provides(%q) = true for uid 65534 without delegation", r)
		}
	}
	if _, ok := g.Dir(); ok {
		t.Error("Dir() = true without a cgroup")
	}
	if d := g.Dirs(); !d.Empty() {
		t.Errorf("Dirs() = %+v for uid 65534 without delegation", d)
	}
	if mech, err := g.Freeze(); !errors.Is(err, ErrNoFreezer) {
		t.Errorf("Freeze() = %q, %v; want ErrNoFreezer without a cgroup", mech, err)
	}
	rec := g.Receipt()
	for k, want := range map[string]string{
		ControlMemory: "RLIMIT_DATA per process (no memory cgroup: kernel memory, such as TCP socket buffers between the sandbox's own sockets, is counted by nothing)",
		ControlTasks:  "RLIMIT_NPROC per user namespace and uid (no pids cgroup)",
		ControlCPU:    "RLIMIT_CPU per process (no cgroup: the group's total is not capped)",
		ControlWall:   "wall clock timer in Watch, then SIGKILL to the placed process",
		ControlKill:   "SIGKILL to the placed process by pidfd (no cgroup; a pid namespace init takes its namespace with it)",
	} {
		if rec[k] != want {
			t.Errorf("Receipt[%s] = %q, want %q", k, rec[k], want)
		}
	}
	if !strings.Contains(rec[NoteCgroupUnavailable], "permission denied") {
		t.Errorf("Receipt[cgroupUnavailable] = %q, want the cause", rec[NoteCgroupUnavailable])
	}
	var rl []string
	for _, r := range g.Rlimits() {
		rl = append(rl, r.Name)
	}
	for _, want := range []string{"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_DATA", "RLIMIT_NPROC"} {
		if !slices.Contains(rl, want) {
			t.Errorf("Rlimits() = %v, missing %s", rl, want)
		}
	}

	// The wall clock still kills the placed process.
	sleeper := exec.Command("/bin/sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.Place(sleeper.Process.Pid); err != nil {
		_ = sleeper.Process.Kill()
		t.Fatalf("Place: %v", err)
	}
	var got KilledBy
	g.Watch(context.Background(), func(k KilledBy) { got = k })
	err = sleeper.Wait()
	if got != KilledByWall || g.KilledBy() != KilledByWall {
		t.Errorf("onKill(%q), KilledBy %q; want wall", got, g.KilledBy())
	}
	if ws, ok := sleeper.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("sleeper: %v, want SIGKILL", err)
	}

	// Detect agrees.
	info := Detect()
	if info.Euid == 0 || info.Delegated {
		t.Errorf("Detect() = euid %d, delegated %v", info.Euid, info.Delegated)
	}
	for _, c := range info.Controllers {
		if c.Usable {
			t.Errorf("Detect(): %s usable for uid 65534 without delegation", c.Name)
		}
	}
}
