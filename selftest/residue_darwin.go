package selftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The residue check on macOS: this process's descriptors and children
// before and after, processes of the user still carrying the battery's
// token in their command line, and files named for it.

// snapshot is this process's descriptors and children.
type snapshot struct {
	fds      map[string]bool
	children map[int]bool
}

func takeSnapshot() snapshot {
	s := snapshot{fds: map[string]bool{}, children: map[int]bool{}}
	if ents, err := os.ReadDir("/dev/fd"); err == nil {
		for _, e := range ents {
			s.fds[e.Name()] = true
		}
	}
	for _, pid := range childPids() {
		s.children[pid] = true
	}
	return s
}

// childPids lists this process's live children.
func childPids() []int {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Geteuid())
	if err != nil {
		return nil
	}
	var out []int
	for _, kp := range kps {
		if int(kp.Eproc.Ppid) == os.Getpid() && kp.Proc.P_stat != 5 { // 5: a zombie
			out = append(out, int(kp.Proc.P_pid))
		}
	}
	return out
}

func residue(before snapshot, token string, roots []string) Residue {
	after := takeSnapshot()
	var checks residueChecks
	procs := reapToken(token)
	for _, pid := range childPids() {
		if !before.children[pid] {
			procs = append(procs, fmt.Sprintf("child %d of this process", pid))
		}
	}
	checks.add("processes", procs, "no process of this user carries the battery's token in its arguments, and this process has no new child")
	var fds []string
	for n := range after.fds {
		if !before.fds[n] {
			fds = append(fds, n)
		}
	}
	// The listing's own descriptor may be a new number: one is allowed.
	if len(fds) <= 1 {
		fds = nil
	}
	checks.add("descriptors", fds, fmt.Sprintf("this process holds the same descriptors as before (%d)", len(before.fds)))
	var files []string
	for _, r := range roots {
		if _, err := os.Lstat(r); err == nil {
			files = append(files, r)
		}
	}
	names, _ := filepath.Glob(filepath.Join(os.TempDir(), "*"+token+"*"))
	files = append(files, names...)
	checks.add("files", files, "the battery's directories and the sandboxes' private directories are removed from "+os.TempDir())
	return checks.residue()
}

// reapToken kills the user's processes whose arguments hold token (the
// battery's own random name) and describes them.
func reapToken(token string) []string {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Geteuid())
	if err != nil {
		return nil
	}
	var found []string
	for _, kp := range kps {
		pid := int(kp.Proc.P_pid)
		if pid == os.Getpid() || kp.Proc.P_stat == 5 {
			continue
		}
		args, err := unix.SysctlRaw("kern.procargs2", pid)
		if err == nil && strings.Contains(string(args), token) {
			found = append(found, "pid "+strconv.Itoa(pid))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return found
}

// planVsock is never played on macOS (no such attempt there).
func planVsock(*fixtures) (*plan, error) { return nil, errors.New("selftest: Linux only") }

// swap exchanges two paths atomically (renamex_np RENAME_SWAP).
func swap(a, b string) error { return unix.RenamexNp(a, b, unix.RENAME_SWAP) }
