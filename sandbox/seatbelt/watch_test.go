package seatbelt

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
)

func pids(ps []Proc) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.Pid)
	}
	slices.Sort(out)
	return out
}

func TestTreeFollowsTheCommand(t *testing.T) {
	tr := NewTree(100)
	// The command (100, its group's leader), a child, a grandchild, a
	// child that made a group of its own; the launcher's parent (airlock,
	// 50) and an unrelated process (300, an old 101 of another group).
	snap := []Proc{
		{Pid: 50, Ppid: 1, Pgid: 50, Start: 1},
		{Pid: 100, Ppid: 50, Pgid: 100, Start: 2},
		{Pid: 101, Ppid: 100, Pgid: 100, Start: 3},
		{Pid: 102, Ppid: 101, Pgid: 100, Start: 4},
		{Pid: 103, Ppid: 102, Pgid: 103, Start: 5},
		{Pid: 104, Ppid: 103, Pgid: 103, Start: 6},
		{Pid: 300, Ppid: 1, Pgid: 300, Start: 7},
	}
	if got, want := pids(tr.Update(snap)), []int{100, 101, 102, 103, 104}; !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	// 102 and 103 exit; 104, whose group is its own, is orphaned to
	// launchd (ppid 1): still the command's, seen before. A process in
	// the command's group is found however it got there (105).
	snap = []Proc{
		{Pid: 50, Ppid: 1, Pgid: 50, Start: 1},
		{Pid: 100, Ppid: 50, Pgid: 100, Start: 2},
		{Pid: 101, Ppid: 100, Pgid: 100, Start: 3},
		{Pid: 104, Ppid: 1, Pgid: 103, Start: 6},
		{Pid: 105, Ppid: 1, Pgid: 100, Start: 8},
		{Pid: 300, Ppid: 1, Pgid: 300, Start: 7},
	}
	if got, want := pids(tr.Update(snap)), []int{100, 101, 104, 105}; !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	// 104 exits and its pid is reused by a process of someone else's: a
	// new start time, not the command's.
	snap = []Proc{
		{Pid: 100, Ppid: 50, Pgid: 100, Start: 2},
		{Pid: 104, Ppid: 1, Pgid: 104, Start: 9},
	}
	if got, want := pids(tr.Update(snap)), []int{100}; !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	// The command exits and its group empties; then a new process gets
	// its pid and leads a group of that id, with a child: neither is the
	// command's.
	tr.Update(nil)
	snap = []Proc{
		{Pid: 100, Ppid: 1, Pgid: 100, Start: 20},
		{Pid: 120, Ppid: 100, Pgid: 100, Start: 21},
	}
	if got := pids(tr.Update(snap)); len(got) != 0 {
		t.Fatalf("a reused pid and its group taken for the command's: %v", got)
	}
}

// TestTreeGroupOutlivesItsLeader: the command exits while a process of
// its group lives on; a process that joins the group later (its id
// cannot be reused while the group has members) is the command's too.
func TestTreeGroupOutlivesItsLeader(t *testing.T) {
	tr := NewTree(100)
	tr.Update([]Proc{{Pid: 100, Ppid: 50, Pgid: 100, Start: 1}, {Pid: 101, Ppid: 100, Pgid: 100, Start: 2}})
	snap := []Proc{{Pid: 101, Ppid: 1, Pgid: 100, Start: 2}, {Pid: 130, Ppid: 1, Pgid: 100, Start: 5}}
	if got, want := pids(tr.Update(snap)), []int{101, 130}; !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
}

// TestTreeMissesAQuickDaemon documents the watch's limit: a process
// born, put in a group of its own and orphaned between two reads is not
// found (the receipt and doctor say so).
func TestTreeMissesAQuickDaemon(t *testing.T) {
	tr := NewTree(100)
	tr.Update([]Proc{{Pid: 100, Ppid: 50, Pgid: 100, Start: 1}})
	got := pids(tr.Update([]Proc{{Pid: 100, Ppid: 50, Pgid: 100, Start: 1}, {Pid: 110, Ppid: 1, Pgid: 110, Start: 2}}))
	if !slices.Equal(got, []int{100}) {
		t.Fatalf("tree %v", got)
	}
}

func TestOver(t *testing.T) {
	tree := []Proc{{Pid: 1, Footprint: 300}, {Pid: 2, Footprint: 300}}
	for _, c := range []struct {
		memory, tasks int64
		want          limits.KilledBy
	}{
		{1000, 5, ""},
		{600, 2, ""},
		{599, 5, limits.KilledByMemory},
		{1000, 1, limits.KilledByPids},
		{599, 1, limits.KilledByMemory},
	} {
		if got := Over(tree, c.memory, c.tasks); got != c.want {
			t.Errorf("Over(memory %d, tasks %d) = %q, want %q", c.memory, c.tasks, got, c.want)
		}
	}
}

func TestDiskUsage(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(a, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(b, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "d", "e", "g"), make([]byte, 1<<19), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link to something large outside counts as a link, not as it.
	if err := os.Symlink("/usr", filepath.Join(b, "l")); err != nil {
		t.Fatal(err)
	}
	n, err := DiskUsage([]string{a, b, filepath.Join(b, "gone")}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1<<20+1<<19 || n > 1<<20+1<<19+1<<16 {
		t.Errorf("usage %d, want about %d", n, 1<<20+1<<19)
	}
	if _, err := DiskUsage([]string{a, b}, 3); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("past the bound: %v", err)
	}
}

func TestRlimits(t *testing.T) {
	caps := limits.Caps{Wall: time.Minute, CPU: 1500 * time.Millisecond, MemoryBytes: 1 << 29, Tasks: 20,
		DiskWriteBytes: 100 << 20, OpenFiles: 256, OutputBytes: 1 << 24}
	rl, notes := Rlimits(caps, HostLimits{NoFileMax: 10240, MaxFilesPerProc: 10240, UserProcs: 400, MaxProcPerUID: 2666})
	want := []Rlimit{{"RLIMIT_CPU", 2, 3}, {"RLIMIT_FSIZE", 100 << 20, 100 << 20}, {"RLIMIT_NOFILE", 256, 256},
		{"RLIMIT_NPROC", 420, 420}, {"RLIMIT_CORE", 0, 0}}
	if !slices.Equal(rl, want) || len(notes) != 0 {
		t.Errorf("Rlimits = %v %v, want %v and no note", rl, notes, want)
	}
	rl, notes = Rlimits(caps, HostLimits{NoFileMax: 128, MaxFilesPerProc: 10240, UserProcs: 2660, MaxProcPerUID: 2666})
	if rl[2].Cur != 128 || rl[3].Cur != 2666 || notes[limits.ControlOpenFiles] == "" || notes[limits.ControlTasks] == "" {
		t.Errorf("lowered by the host: %v %v", rl, notes)
	}
	r := Receipt(caps, rl, notes, 0, false, "watched")
	for _, k := range []string{limits.ControlWall, limits.ControlCPU, limits.ControlMemory, limits.ControlTasks,
		limits.ControlDisk, limits.ControlOpenFiles, limits.ControlKill, "network", "filesystem", "sandbox", "macos"} {
		if r[k] == "" {
			t.Errorf("receipt lacks %q", k)
		}
	}
	if r[limits.ControlOpenFiles] != notes[limits.ControlOpenFiles] || r["network"] != "no network: Seatbelt allows no connection" {
		t.Errorf("receipt %v", r)
	}
}

func TestRusageFootprint(t *testing.T) {
	b := make([]byte, RusageInfoV2Size)
	for i := 0; i < 18; i++ {
		// Each counter holds its index: uuid, user, system, idle wakeups,
		// interrupt wakeups, pageins, wired, resident, phys_footprint...
		binary.LittleEndian.PutUint64(b[16+8*i:], uint64(i)<<20)
	}
	if got := RusageFootprint(b); got != 7<<20 {
		t.Errorf("footprint %d, want the eighth counter %d", got, 7<<20)
	}
	if got := RusageFootprint(b[:40]); got != 0 {
		t.Errorf("short buffer: %d", got)
	}
}
