package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRunAbandoned: a run whose airlock is killed (SIGKILL) after its
// decision is recorded as run_abandoned by the next writer, once; a live
// run's claim, and an ended one, are not.
func TestRunAbandoned(t *testing.T) {
	l, path := openTest(t)
	live, err := l.BeginRun("run-live")
	if err != nil {
		t.Fatal(err)
	}
	ended, err := l.BeginRun("run-ended")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ended.End(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.BeginRun("run-live"); err == nil {
		t.Fatal("a live run was claimed twice")
	}
	if _, err := l.Append(denial("run_tests", "ls")); err != nil {
		t.Fatal(err)
	}
	if err := helper(t, "run-then-die", path, "run-killed").Run(); err == nil {
		t.Fatal("the helper was not killed")
	}
	// A file that is not a claim is left alone.
	writeFile(t, filepath.Join(path+RunsSuffix, "notes.txt"), []byte("x"))
	l2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	for range 2 {
		if _, err := l2.Append(denial("run_tests", "ls")); err != nil {
			t.Fatal(err)
		}
	}
	var abandoned []string
	for _, ev := range parseEvents(t, readLines(t, path)) {
		if ev.Context.Event == EventRunAbandoned {
			abandoned = append(abandoned, ev.Context.RunID)
			if ev.Context.PID <= 0 || ev.Context.Details["claimedAt"] == "" {
				t.Errorf("abandoned record without its claim's pid and time: %+v", ev.Context)
			}
		}
	}
	if len(abandoned) != 1 || abandoned[0] != "run-killed" {
		t.Fatalf("abandoned runs: %v, want [run-killed]", abandoned)
	}
	if _, err := os.Stat(filepath.Join(path+RunsSuffix, "run-killed"+claimSuffix)); !os.IsNotExist(err) {
		t.Errorf("the dead run's claim is still there: %v", err)
	}
	if _, err := live.End(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path+RunsSuffix, "notes.txt")); err != nil {
		t.Errorf("a file that is not a claim was removed: %v", err)
	}
	if _, verr := verifyBytes(t, join(readLines(t, path))); verr != nil {
		t.Fatal(verr)
	}
}
