package limits

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ownersDir holds one lock file per live group, listing its directories.
// Its owner holds an exclusive flock on it for the group's life, so the
// lock outlives nothing: when airlock dies (kill -9), the kernel drops the
// lock, and the next New sweeps the group's directories away. Hand-written
// because no cgroup library tracks ownership across processes.
var ownersDir = "/run/airlock/cgroups"

// owner is a held claim on a group's directories.
type owner struct {
	f    *os.File
	path string
}

// claim records dirs under a lock held until release. The file is locked
// under a temporary name and then renamed into place, so a sweeper never
// sees it unlocked.
func claim(name string, dirs []string) (*owner, error) {
	if err := os.MkdirAll(ownersDir, 0o700); err != nil {
		return nil, err
	}
	tmp := filepath.Join(ownersDir, ".new-"+name)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	final := filepath.Join(ownersDir, name+".lock")
	if _, err := f.WriteString(strings.Join(dirs, "\n") + "\n"); err == nil {
		err = os.Rename(tmp, final)
		if err == nil {
			return &owner{f: f, path: final}, nil
		}
	}
	f.Close()
	os.Remove(tmp)
	return nil, errors.New("limits: could not record the group's owner")
}

// release drops the claim after the directories are gone.
func (o *owner) release() {
	if o == nil {
		return
	}
	os.Remove(o.path)
	o.f.Close()
}

// SweepStale removes the cgroup directories of groups whose owning airlock
// process died without removing them, killing what is still inside
// (New does this first too). A session's watchdog calls it when the
// session's holder dies, so that nothing of its sandbox is left. Only
// files it can lock are touched, so live groups of other airlock
// processes are safe.
func SweepStale() {
	locks, _ := filepath.Glob(filepath.Join(ownersDir, "*.lock"))
	for _, p := range locks {
		f, err := os.OpenFile(p, os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			f.Close() // its owner is alive
			continue
		}
		data := make([]byte, 64<<10)
		n, _ := f.ReadAt(data, 0)
		removed := true
		for _, d := range strings.Split(string(data[:n]), "\n") {
			if isOwnGroupDir(d) && !removeStaleDir(d) {
				removed = false
			}
		}
		if removed {
			os.Remove(p)
		}
		f.Close()
	}
}

// isOwnGroupDir accepts only absolute paths of airlock group directories
// inside the cgroup file system, so a corrupted lock file cannot make the
// sweeper touch anything else.
func isOwnGroupDir(d string) bool {
	return strings.HasPrefix(d, "/sys/fs/cgroup/") && filepath.Clean(d) == d &&
		strings.HasPrefix(filepath.Base(d), "airlock-")
}

// removeStaleDir kills what is left in one directory and removes it.
func removeStaleDir(d string) bool {
	if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
		return true
	}
	if subs, _ := filepath.Glob(filepath.Join(d, "airlock-*")); len(subs) > 0 {
		// A session's step groups, first: a directory with a child
		// cannot be removed.
		for _, sub := range subs {
			if st, err := os.Lstat(sub); err == nil && st.IsDir() {
				removeStaleDir(sub)
			}
		}
	}
	_ = os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0)
	_ = os.WriteFile(filepath.Join(d, "freezer.state"), []byte("FROZEN"), 0)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range bytes.Fields(procs) {
			if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		_ = os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0)
		if err := unix.Rmdir(d); err == nil || errors.Is(err, unix.ENOENT) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
