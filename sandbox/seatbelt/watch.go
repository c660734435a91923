package seatbelt

import (
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
// process group, the child of one of its processes, or was one of its
// processes at the previous read. A process that is born, leaves the
// process group and loses its parent between two reads (a double fork
// and setsid, within one poll) is not found; it stays under the profile
// and its rlimits.
type Tree struct {
	root, pgid int
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
	byPid := make(map[int]Proc, len(procs))
	for _, p := range procs {
		byPid[p.Pid] = p
	}
	member := map[int]bool{}
	for _, p := range procs {
		if start, ok := t.seen[p.Pid]; p.Pid == t.root || p.Pgid == t.pgid || ok && start == p.Start {
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
