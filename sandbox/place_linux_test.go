package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/limits"
)

// TestPlacedReadsTheGroupsTasks checks the parent's check of the init's
// own move: a process outside the group's v1 directories is reported, by
// directory, and found once it is in them all.
func TestPlacedReadsTheGroupsTasks(t *testing.T) {
	testutil.RequireRoot(t)
	g, err := limits.New(testCaps(), limits.Options{Name: "TestPlaced-" + strconv.Itoa(os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Delete(); err != nil {
			t.Errorf("Delete: %v", err)
		}
	}()
	v1 := g.Dirs().V1
	if len(v1) == 0 {
		t.Skip("no cgroup v1 hierarchy on this host")
	}
	sleeper := exec.Command("/bin/sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sleeper.Process.Kill()
		sleeper.Wait()
	}()
	pid := sleeper.Process.Pid
	if err := placed(pid, v1); err == nil || !strings.Contains(err.Error(), "the init is not in the group's") {
		t.Errorf("placed(a process outside the group) = %v, want it reported", err)
	}
	if err := g.Place(pid); err != nil {
		t.Fatal(err)
	}
	if err := placed(pid, v1); err != nil {
		t.Errorf("placed(a placed process) = %v", err)
	}
	missing := map[string]string{"memory": t.TempDir()}
	if err := placed(pid, missing); err == nil || !strings.Contains(err.Error(), "read the group's memory tasks") {
		t.Errorf("placed(no tasks file) = %v, want a read error", err)
	}
	files, err := openTasks(v1)
	if err != nil {
		t.Fatal(err)
	}
	closeFiles(files)
	if len(files) != len(v1) {
		t.Errorf("openTasks opened %d tasks files for %d directories", len(files), len(v1))
	}
}
