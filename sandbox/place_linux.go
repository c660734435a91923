package sandbox

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// Placing the init in its group without an RCU grace period.
//
// Writing a pid to cgroup.procs takes the kernel's global
// cgroup_threadgroup_rwsem for writing, and its first writer after a quiet
// spell waits for an RCU grace period: 10 to 13 ms on these hosts, more
// than a whole bubblewrap run, and every fork on the host stalls behind
// it. Two ways in avoid that lock:
//
//   - cgroup v2: clone straight into the group (CLONE_INTO_CGROUP,
//     limits.Group.Dir), the way the init is started;
//   - cgroup v1: a thread moving itself, by writing "0" to a hierarchy's
//     "tasks" file, skips the lock (the kernel's cgroup_procs_write_start:
//     the current thread cannot exit or exec under it). The parent opens
//     the tasks file of each of the group's v1 directories
//     (limits.Group.Dirs; the open-time credentials are the ones checked)
//     and passes the descriptors; the init, first thing, writes "0" to
//     each from its main thread — the thread group leader, locked since
//     the package's init() — before it reads its config. Every process
//     the init forks (the target, each step) forks from that thread and
//     starts in the group; the leader owns the init's memory
//     (memcg v1 charges a process's memory to its leader's group), and on
//     the unified hierarchy the whole init is in the group from its clone,
//     for cgroup.kill. The init's other runtime threads stay in the
//     caller's v1 groups: moving them too would take a psx round per
//     hierarchy (milliseconds on a loaded host) for a few idle threads'
//     CPU time.
//
// limits.Group.Place, which writes cgroup.procs, remains the fallback: for
// a group without any cgroup (it then only remembers the process for
// KillAll), and should the init not be found in every directory after.

// openTasks opens the tasks file of each of the group's v1 directories
// (limits.Group.Dirs: controller → directory) for writing, once per
// directory, in the controllers' order.
func openTasks(dirs map[string]string) ([]*os.File, error) {
	var files []*os.File
	var opened []string
	for _, k := range slices.Sorted(maps.Keys(dirs)) {
		if slices.Contains(opened, dirs[k]) {
			continue // two controllers in one hierarchy
		}
		f, err := os.OpenFile(filepath.Join(dirs[k], "tasks"), os.O_WRONLY, 0)
		if err != nil {
			closeFiles(files)
			return nil, fmt.Errorf("sandbox: open %s tasks: %w", k, err)
		}
		files = append(files, f)
		opened = append(opened, dirs[k])
	}
	return files, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// placed reports whether pid's main thread sits in each of the group's v1
// directories: the kernel lists it in each directory's tasks file.
func placed(pid int, dirs map[string]string) error {
	want := strconv.Itoa(pid)
	for _, k := range slices.Sorted(maps.Keys(dirs)) {
		lines, err := initproc.ReadLines(filepath.Join(dirs[k], "tasks"))
		if err != nil {
			return fmt.Errorf("read the group's %s tasks: %w", k, err)
		}
		if !slices.Contains(lines, want) {
			return fmt.Errorf("the init is not in the group's %s directory %s", k, dirs[k])
		}
	}
	return nil
}

// placementReceipt says how the init got into its group.
func placementReceipt(inV2 bool, v1 int) string {
	var parts []string
	if inV2 {
		parts = append(parts, "cloned into the cgroup v2 group (CLONE_INTO_CGROUP)")
	}
	if v1 > 0 {
		parts = append(parts, fmt.Sprintf("moved itself into %d cgroup v1 hierarchies (tasks, no cgroup.procs write)", v1))
	}
	return strings.Join(parts, "; ")
}
