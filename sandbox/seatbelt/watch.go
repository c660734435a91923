package seatbelt

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/limits"
)

// Proc is one process as the watch reads the process table.
type Proc struct {
	Pid, Ppid, Pgid int
	// Start identifies the process across reads: its start time, in any
	// unit, so that a reused pid is a new process.
	Start int64
	// Footprint is its memory footprint in bytes (phys_footprint on
	// macOS, what Activity Monitor shows), 0 when unknown.
	Footprint int64
}

// Tree follows one command's processes from read to read of the process
// table. macOS has no group that holds a process tree whatever it does:
// a process is the command's when it is the command (the root), in its
// process group while that group lives, the child of one of its
// processes, or was one of its processes at the previous read (the same
// pid and start). A process that is born, leaves the process group and
// loses its parent between two reads (a double fork and setsid, within
// one poll) is not found; it stays under the profile and its rlimits.
//
// A pid is never taken for the command's by its number alone: the
// root's and every member's start must match, and the group counts only
// while one of its known members lives (the kernel does not reuse the id
// of a group that has members; once it is empty, a new process may get
// that id and lead a group of its own).
type Tree struct {
	root, pgid int
	rootStart  int64
	rootSeen   bool
	seen       map[int]int64 // pid → start of every member found so far
}

// NewTree follows the processes of root, which leads its own process
// group (the launcher makes it a session leader).
func NewTree(root int) *Tree {
	return &Tree{root: root, pgid: root, seen: map[int]int64{}}
}

// Update reads one snapshot of the process table and returns the tree's
// processes alive in it.
func (t *Tree) Update(procs []Proc) []Proc {
	isRoot := func(p Proc) bool { return p.Pid == t.root && (!t.rootSeen || p.Start == t.rootStart) }
	known := func(p Proc) bool { start, ok := t.seen[p.Pid]; return ok && start == p.Start }
	groupLives := false
	for _, p := range procs {
		if isRoot(p) {
			if !t.rootSeen {
				t.rootSeen, t.rootStart = true, p.Start
			}
			groupLives = true
		}
		if p.Pgid == t.pgid && known(p) {
			groupLives = true
		}
	}
	member := map[int]bool{}
	for _, p := range procs {
		inGroup := groupLives && p.Pgid == t.pgid && (p.Pid != t.pgid || isRoot(p))
		if isRoot(p) || known(p) || inGroup {
			member[p.Pid] = true
		}
	}
	// Children of members, to a fixed point (a chain of any depth).
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if !member[p.Pid] && member[p.Ppid] && p.Ppid != p.Pid {
				member[p.Pid], grew = true, true
			}
		}
	}
	var out []Proc
	seen := make(map[int]int64, len(member))
	for _, p := range procs {
		if member[p.Pid] {
			out = append(out, p)
			seen[p.Pid] = p.Start
		}
	}
	t.seen = seen
	return out
}

// Over names the cap the tree exceeds, if any: its footprint summed
// over memory, or its processes over tasks.
func Over(tree []Proc, memory, tasks int64) limits.KilledBy {
	switch {
	case memory > 0 && Footprint(tree) > memory:
		return limits.KilledByMemory
	case tasks > 0 && int64(len(tree)) > tasks:
		return limits.KilledByPids
	}
	return ""
}

// Footprint sums a tree's footprints.
func Footprint(tree []Proc) int64 {
	var sum int64
	for _, p := range tree {
		sum += p.Footprint
	}
	return sum
}

// ErrTooManyEntries is returned by DiskUsage past its bound on entries.
var ErrTooManyEntries = errors.New("too many entries")

// DiskUsage sums the sizes of the files under dirs (their allocated
// blocks where the system reports them, else their lengths), walking at
// most maxEntries entries: the watch of the disk cap where no volume of
// a fixed size holds the copies. Links are not followed; an entry that
// vanishes during the walk is skipped.
func DiskUsage(dirs []string, maxEntries int) (int64, error) {
	var sum int64
	n := 0
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if n++; n > maxEntries {
				return ErrTooManyEntries
			}
			fi, err := e.Info()
			if err != nil {
				return nil
			}
			sum += allocated(fi)
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return sum, err
		}
	}
	return sum, nil
}

// RusageInfoV2Size is the size of macOS's struct rusage_info_v2, which
// proc_pid_rusage(pid, RUSAGE_INFO_V2, buf) fills.
const RusageInfoV2Size = 160

// RusageFootprint reads ri_phys_footprint from a struct rusage_info_v2
// (a 16-byte uuid, then 64-bit counters; every Mac is little-endian):
// the eighth counter. 0 when b is too short.
func RusageFootprint(b []byte) int64 {
	const at = 16 + 7*8
	if len(b) < at+8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b[at:]))
}
