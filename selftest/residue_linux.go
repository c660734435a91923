package selftest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/airlock-sandbox/airlock/internal/mountinfo"
)

// snapshot is what the residue check compares before and after the
// battery: this process's descriptors and children, and the mount table.
type snapshot struct {
	fds      map[string]string // fd number -> what it points at
	children map[int]bool
	mounts   map[string]bool
}

func takeSnapshot() snapshot {
	s := snapshot{fds: map[string]string{}, children: map[int]bool{}, mounts: map[string]bool{}}
	if names, err := readDirNames("/proc/self/fd"); err == nil {
		for _, n := range names {
			if t, err := os.Readlink("/proc/self/fd/" + n); err == nil {
				s.fds[n] = t
			}
		}
	}
	for _, pid := range childPids() {
		s.children[pid] = true
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		mounts, _ := mountinfo.Parse(b)
		for _, m := range mounts {
			// Without ids, which renumber.
			s.mounts[strings.Join([]string{m.Root, m.Point, m.Options, m.FSType, m.Source, m.SuperOptions}, " ")] = true
		}
	}
	return s
}

func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// childPids lists this process's children, from every thread.
func childPids() []int {
	var out []int
	tasks, _ := readDirNames("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// runtimeFD reports whether a descriptor target is one the Go runtime
// opens lazily (its poller), which is not the battery's residue.
func runtimeFD(target string) bool {
	return target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]"
}

// residue compares before with now, after the fixtures are closed: token
// and roots name what the battery made.
func residue(before snapshot, token string, roots []string) Residue {
	after := takeSnapshot()
	var checks residueChecks

	procs := reapToken(token)
	for _, pid := range childPids() {
		if !before.children[pid] {
			procs = append(procs, fmt.Sprintf("child %d of this process: %s", pid, cmdline(pid)))
		}
	}
	checks.add("processes", procs, "no process carries the battery's token in its command line or environment, and this process has no new child")

	checks.add("cgroups", cgroupsNamed(token), "no cgroup directory named for the battery's runs under /sys/fs/cgroup")

	var mounts, nsMounts []string
	for m := range after.mounts {
		if before.mounts[m] {
			continue
		}
		switch {
		case strings.Contains(m, token) || slices.ContainsFunc(roots, func(r string) bool { return strings.Contains(m, r) }):
			mounts = append(mounts, m)
		case strings.Contains(m, " nsfs "):
			nsMounts = append(nsMounts, m)
		}
	}
	checks.add("mounts", mounts, fmt.Sprintf("no new mount in /proc/self/mountinfo names the battery's token or directories (%d mounts before, %d after)", len(before.mounts), len(after.mounts)))

	var fdsLeft, nsFDs []string
	for n, t := range after.fds {
		if before.fds[n] == t || runtimeFD(t) || n == "" {
			continue
		}
		if strings.HasPrefix(t, "/proc/") && strings.HasSuffix(t, "/fd") {
			continue // the directory listing itself
		}
		if isNamespace(t) {
			nsFDs = append(nsFDs, n+" -> "+t)
			continue
		}
		fdsLeft = append(fdsLeft, n+" -> "+t)
	}
	checks.add("namespaces", append(nsFDs, nsMounts...), "no namespace is held by a descriptor of this process or a new nsfs mount; sandbox namespaces die with their processes")
	checks.add("descriptors", fdsLeft, fmt.Sprintf("this process holds the same descriptors as before (%d)", len(before.fds)))

	var files []string
	for _, r := range roots {
		if _, err := os.Lstat(r); err == nil {
			files = append(files, r)
		}
	}
	for _, dir := range []string{os.TempDir(), "/var/tmp", "/dev/shm"} {
		names, _ := readDirNames(dir)
		for _, n := range names {
			if strings.Contains(n, token) {
				files = append(files, filepath.Join(dir, n))
			}
		}
	}
	checks.add("files", files, "the battery's directories are removed and no file named for it is in "+os.TempDir()+", /var/tmp or /dev/shm")

	return checks.residue()
}

// isNamespace reports whether a descriptor's target is a namespace
// ("net:[4026531840]").
func isNamespace(target string) bool {
	kind, _, ok := strings.Cut(target, ":[")
	return ok && slices.Contains([]string{"net", "mnt", "pid", "pid_for_children", "user", "uts", "ipc", "cgroup", "time", "time_for_children"}, kind)
}

// reapToken finds the processes whose command line or environment holds
// token, kills each by its id (the battery started them all: the token is
// its own random name), and describes them.
func reapToken(token string) []string {
	var found []string
	self := os.Getpid()
	names, _ := readDirNames("/proc")
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		hit := false
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile("/proc/" + n + "/" + f)
			if err == nil && bytes.Contains(b, []byte(token)) {
				hit = true
			}
		}
		if hit {
			found = append(found, fmt.Sprintf("pid %d: %s", pid, cmdline(pid)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return found
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// cgroupsNamed walks the cgroup mounts for directories whose name holds
// token.
func cgroupsNamed(token string) []string {
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a group removed while we walk, or one we may not read
		}
		if d.IsDir() && strings.Contains(d.Name(), token) {
			found = append(found, p)
			return fs.SkipDir
		}
		return nil
	})
	return found
}
