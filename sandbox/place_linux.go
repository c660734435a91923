package sandbox

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
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
//     has every one of its threads write "0" to each (psx, as for the
//     capability drop), before it reads its config.
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

// placeSelf is the init's side: every thread writes "0" to each tasks
// descriptor (fds first..first+n-1), then the descriptors are closed.
func placeSelf(first, n int) error {
	zero := []byte("0")
	for fd := first; fd < first+n; fd++ {
		_, _, e := psx.Syscall3(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&zero[0])), 1)
		unix.Close(fd)
		if e != 0 {
			return fmt.Errorf("move into the group's v1 hierarchies: %w", e)
		}
	}
	return nil
}

// placed reports whether every thread of pid sits in each of dirs.
func placed(pid int, dirs map[string]string) error {
	mounts, err := v1Mounts()
	if err != nil {
		return err
	}
	tasks, err := os.ReadDir("/proc/" + itoa(pid) + "/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		lines, err := readLines("/proc/" + itoa(pid) + "/task/" + t.Name() + "/cgroup")
		if err != nil {
			return err
		}
		for _, l := range lines {
			parts := strings.SplitN(l, ":", 3)
			if len(parts) != 3 {
				continue
			}
			want, ok := dirs[parts[1]]
			if ok && filepath.Join(mounts[parts[1]], parts[2]) != want {
				return fmt.Errorf("thread %s is in %s, not %s", t.Name(), parts[2], want)
			}
		}
	}
	return nil
}
