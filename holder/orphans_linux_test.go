package holder

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil/proctable"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// TestOrphansKilled follows a holder as macOS's watchdog does (no
// subreaper): once the holder is killed, the processes it left — one in
// a session of its own, both reparented — are found and killed, and a
// process of the same user that is not the holder's is left alone.
func TestOrphansKilled(t *testing.T) {
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	holder := exec.Command("sh", "-c", "setsid sleep 300 & sleep 300 & wait")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	o := newOrphans(holder.Process.Pid, proctable.Procs)
	var left []seatbelt.Proc
	for deadline := time.Now().Add(10 * time.Second); len(left) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the holder's processes: %v, want it and two children", left)
		}
		left = o.read()
	}
	holder.Process.Kill()
	holder.Wait()
	if survivors := o.kill(5 * time.Second); survivors != nil {
		t.Fatalf("survivors: %v", survivors)
	}
	for _, p := range left {
		if p.Pid != holder.Process.Pid && syscall.Kill(p.Pid, 0) == nil && alive(p.Pid) {
			t.Errorf("pid %d, the holder's, is alive", p.Pid)
		}
	}
	if syscall.Kill(other.Process.Pid, 0) != nil {
		t.Error("a process not the holder's was killed")
	}
}

// alive reports whether pid is in the process table and not a zombie.
func alive(pid int) bool {
	ps, _ := proctable.Procs()
	return slices.ContainsFunc(ps, func(p seatbelt.Proc) bool { return p.Pid == pid })
}

// TestBoxOf takes the private directories of a dead holder's sessions,
// by their exact names, and of its pool, and no one else's.
func TestBoxOf(t *testing.T) {
	for name, want := range map[string]bool{
		"airlock-s1-12345":         true,
		"airlock-s2-7":             true,
		"airlock-s1-x-12345":       false, // session s1-x's
		"airlock-s1-":              false,
		"airlock-s1-12a":           false,
		"airlock-s10-12345":        false,
		"other-airlock-s1-12":      false,
		"airlock-pool-42-abc-123":  true,
		"airlock-pool-421-abc-123": false, // another holder's pool
		"airlock-" + PoolID + "-1": false,
	} {
		if got := boxOf(name, 42, []string{"s1", "s2"}); got != want {
			t.Errorf("boxOf(%q) = %v, want %v", name, got, want)
		}
	}
}
