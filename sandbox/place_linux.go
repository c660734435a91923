package sandbox

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
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
//     each v1 directory's tasks file (the open-time credentials are the
//     ones checked) and passes the descriptors; the init, first thing,
//     writes "0" to each from its main thread — the thread group leader,
//     locked since the package's init() — before it reads its config.
//     Every process the init forks (the target, each step) forks from that
//     thread and starts in the group; the leader owns the init's memory
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

// v1Dirs finds the group's directories in the v1 hierarchies, as limits
// makes them (limits.Options: with no Parent, "airlock-" + Name under the
// caller's own cgroup in each hierarchy), and returns controller
// hierarchy line prefix → directory. A hierarchy without one is skipped.
func v1Dirs(group string) (map[string]string, error) {
	lines, err := readLines("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("sandbox: read own cgroups: %w", err)
	}
	mounts, err := v1Mounts()
	if err != nil {
		return nil, fmt.Errorf("sandbox: read cgroup mounts: %w", err)
	}
	dirs := map[string]string{}
	for _, l := range lines {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue // v2, or a named hierarchy without controllers
		}
		m, ok := mounts[parts[1]]
		if !ok {
			continue
		}
		d := filepath.Join(m, parts[2], group)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dirs[parts[1]] = d
		}
	}
	return dirs, nil
}

// v1Mounts maps a v1 hierarchy's controller list ("memory",
// "cpu,cpuacct") to where it is mounted with its root.
func v1Mounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" || fields[3] != "/" {
			continue
		}
		var ctrls []string
		for _, o := range strings.Split(tail[2], ",") {
			switch o {
			case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "xattr", "clone_children", "favordynmods", "nofavordynmods", "noprefix", "cpuset_v2_mode":
			default:
				if !strings.Contains(o, "=") {
					ctrls = append(ctrls, o)
				}
			}
		}
		slices.Sort(ctrls)
		if len(ctrls) > 0 {
			out[strings.Join(ctrls, ",")] = fields[4]
		}
	}
	return out, sc.Err()
}

// openTasks opens the tasks file of each directory for writing.
func openTasks(dirs map[string]string) ([]*os.File, error) {
	var files []*os.File
	for _, k := range slices.Sorted(maps.Keys(dirs)) {
		f, err := os.OpenFile(filepath.Join(dirs[k], "tasks"), os.O_WRONLY, 0)
		if err != nil {
			closeFiles(files)
			return nil, fmt.Errorf("sandbox: open %s tasks: %w", k, err)
		}
		files = append(files, f)
	}
	return files, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// placeSelf is the init's side: its main thread writes "0" to each tasks
// descriptor (fds first..first+n-1), which are then closed.
func placeSelf(first, n int) error {
	if unix.Gettid() != unix.Getpid() {
		return fmt.Errorf("move into the group: running on thread %d, not the leader", unix.Gettid())
	}
	for fd := first; fd < first+n; fd++ {
		_, err := unix.Write(fd, []byte("0"))
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("move into the group's v1 hierarchies: %w", err)
		}
	}
	return nil
}

// placed reports whether pid's main thread sits in each of dirs.
func placed(pid int, dirs map[string]string) error {
	if len(dirs) == 0 {
		return nil
	}
	mounts, err := v1Mounts()
	if err != nil {
		return err
	}
	lines, err := readLines("/proc/" + itoa(pid) + "/task/" + itoa(pid) + "/cgroup")
	if err != nil {
		return err
	}
	seen := 0
	for _, l := range lines {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		want, ok := dirs[parts[1]]
		if !ok {
			continue
		}
		if got := filepath.Join(mounts[parts[1]], parts[2]); got != want {
			return fmt.Errorf("the init is in %s, not %s", got, want)
		}
		seen++
	}
	if seen != len(dirs) {
		return fmt.Errorf("the init is in %d of the group's %d v1 hierarchies", seen, len(dirs))
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
