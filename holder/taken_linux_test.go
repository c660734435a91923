package holder_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/holder/rundir"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// takenEnv marks TestRuntimeDirTaken's re-runs: "ns" in its mount
// namespace, "nobody" as uid 65534.
const takenEnv = "AIRLOCK_TEST_RUNDIR_TAKEN"

// squatter is the uid that makes /tmp/airlock-65534 first.
const squatter = 4242

// TestRuntimeDirTaken: another local user made /tmp/airlock-65534 before
// uid 65534 ran airlock, as a directory open to everyone (or closed to
// them). The user's session commands neither trust it nor fail: the
// holder listens in the user's own $HOME/.local/state/airlock/run, where
// its clients (the full one and the quick one) find it. With no state
// directory to use, Dir refuses with the fix. Before, every session
// command failed ("owned by another user"). It runs in a mount namespace
// of its own with a /tmp of its own, so that the /tmp/airlock-65534 other
// tests use is never touched.
func TestRuntimeDirTaken(t *testing.T) {
	switch os.Getenv(takenEnv) {
	case "nobody":
		runtimeDirTakenAsNobody(t)
		return
	case "ns":
		if !testutil.InNamespaces() {
			t.Fatal("not in the test's namespaces")
		}
	default:
		testutil.RunTestInNamespaces(t, "TestRuntimeDirTaken", syscall.CLONE_NEWNS, takenEnv+"=ns")
		return
	}
	if err := unix.Mount("airlock-test", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o777, 0o700} {
		taken := "/tmp/airlock-65534"
		os.RemoveAll(taken)
		if err := os.Mkdir(taken, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(taken, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		if err := os.Chown(taken, squatter, squatter); err != nil {
			t.Fatal(err)
		}
		home, err := os.MkdirTemp("", "home-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(home, testutil.NobodyID, testutil.NobodyID); err != nil {
			t.Fatal(err)
		}
		// The test binary, in the /tmp this namespace covered, as
		// /proc/self/exe still shows it.
		self := "/proc/self/exe"
		cmd := testutil.AsNobody(t, exec.Command(self, "-test.run=^TestRuntimeDirTaken$", "-test.v", "-test.count=1"))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp", "HOME=" + home, "GORACE=atexit_sleep_ms=0", takenEnv + "=nobody"}
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestRuntimeDirTaken") {
			t.Fatalf("mode %v, as uid %d: %v\n%s", mode, testutil.NobodyID, err, out)
		}
		if entries, err := os.ReadDir(taken); err != nil || len(entries) != 0 {
			t.Errorf("mode %v: the squatter's directory holds %v (%v)", mode, entries, err)
		}
		os.RemoveAll(home)
	}
}

// runtimeDirTakenAsNobody is TestRuntimeDirTaken as uid 65534.
func runtimeDirTakenAsNobody(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	own := filepath.Join(os.Getenv("HOME"), ".local/state/airlock/run")
	dir, err := holder.Dir()
	if err != nil || dir != own {
		t.Fatalf("Dir = %q, %v; want %s", dir, err, own)
	}
	if got := rundir.Path(os.Geteuid()); got != own || rundir.Why(got, os.Geteuid()) != "" {
		t.Fatalf("the quick client looks in %s (%s), not in %s", got, rundir.Why(got, os.Geteuid()), own)
	}
	info := start(t, dir, filepath.Join(t.TempDir(), "audit.jsonl"))
	defer stop(dir, info.ID)
	if filepath.Dir(info.Socket) != own {
		t.Errorf("the holder listens on %s", info.Socket)
	}
	again, err := holder.Dir()
	if err != nil || again != own {
		t.Fatalf("a client's Dir = %q, %v", again, err)
	}
	c, err := holder.Dial(again, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if res, err := c.Exec(context.Background(), sh("echo ran", &out)); err != nil || res.ExitCode != 0 || out.String() != "ran\n" {
		t.Fatalf("a step: %+v %v %q", res, err, out.String())
	}
	if infos, err := holder.List(again); err != nil || len(infos) != 1 || infos[0].ID != info.ID {
		t.Errorf("list: %+v %v", infos, err)
	}
	if _, _, err := c.Stop(nil, nil); err != nil {
		t.Fatal(err)
	}
	waitGone(t, info.Watchdog)

	// No state directory of the user's to use: refused, with the fix.
	t.Setenv("HOME", "/nonexistent")
	_, err = holder.Dir()
	for _, want := range []string{"set XDG_RUNTIME_DIR to a directory of yours", "/tmp/airlock-65534, which is uid 4242's, not yours"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Dir with no home: %v; want %q", err, want)
		}
	}
	t.Setenv("HOME", "")
	if _, err := holder.Dir(); err == nil || !strings.Contains(err.Error(), "/tmp/airlock-65534 is uid 4242's, not yours: refusing it (set XDG_RUNTIME_DIR") {
		t.Errorf("Dir with no HOME: %v", err)
	}
}
