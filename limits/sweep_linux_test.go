package limits

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestSweepStaleGroup kills the owner of a group (as kill -9 of airlock
// would) and checks that the next New removes the group's directories,
// the step groups inside them included, and kills what was left in them,
// while a live group is left alone.
func TestSweepStaleGroup(t *testing.T) {
	testutil.RequireRoot(t)
	live, err := New(testCaps(), Options{Name: testName(t) + "-live"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Delete()

	stale, err := New(testCaps(), Options{Name: testName(t) + "-stale"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if err := stale.Place(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	dirs := stale.sys.dirs()
	// A session's step group inside it, holding the process: the sweep
	// removes it first.
	child, err := stale.NewChild("step-1")
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	childDirs, _ := child.Dirs()
	for _, d := range childDirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		dirs = append([]string{d}, dirs...)
	}
	// The owner dies: its lock goes with it. (Closing the lock file is
	// what the kernel does to a killed process's files.)
	stale.sys.owner.f.Close()

	next, err := New(testCaps(), Options{Name: testName(t) + "-next"})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Delete()
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("stale group directory %s survived the sweep", d)
		}
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the process left in the stale group was not killed")
	}
	for _, d := range live.sys.dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("live group directory %s was swept: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ownersDir, "airlock-"+testName(t)+"-stale.lock")); !os.IsNotExist(err) {
		t.Errorf("stale lock file left behind")
	}
}
