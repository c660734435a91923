//go:build unix

package findings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Mark writes a new file name holding body into the findings directory
// dir after a run (the runbook's UNTRUSTED marker), the way the copy-out
// writes: dir is reached without following a link and must be a
// directory of the caller's (rootful: of anyone, whom the file is then
// given to); an entry of that name already there, which the sandbox may
// have left, is moved aside (renamed, never written through).
func Mark(dir, name string, body []byte) error {
	if err := mark(dir, name, body); err != nil {
		return fmt.Errorf("mark the findings in %s: %w", Quote(dir), err)
	}
	return nil
}

func mark(dir, name string, body []byte) error {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return fmt.Errorf("bad file name %q", name)
	}
	fd, err := openNoLinks(unix.AT_FDCWD, filepath.Clean(dir), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return walkErr(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	euid := os.Geteuid()
	if euid != 0 && int(st.Uid) != euid {
		return fmt.Errorf("it belongs to uid %d, not to the caller", st.Uid)
	}
	var old unix.Stat_t
	if err := unix.Fstatat(fd, name, &old, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		aside := fmt.Sprintf("%s-from-sandbox-%d", name, old.Ino)
		if err := renameNoReplace(fd, name, aside); err != nil {
			return fmt.Errorf("move the sandbox's %s aside: %w", name, err)
		}
	}
	out, err := openBeneath(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(out), name)
	_, err = f.Write(body)
	if err == nil && euid == 0 && (st.Uid != 0 || st.Gid != 0) {
		err = unix.Fchown(out, int(st.Uid), int(st.Gid))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
