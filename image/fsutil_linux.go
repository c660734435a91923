package image

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// resolveBeneath confines every lookup below the extraction root: no "..",
// no absolute paths, no symlinks at all (so nothing is ever written through
// one), no magic links, no crossing into another mount.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// openBeneath opens rel below dirfd with openat2 and resolveBeneath (which
// refuses a symlink in the last component too, with ELOOP). It
// retries EAGAIN (a concurrent rename elsewhere on the system can make
// RESOLVE_BENEATH lookups ask for a retry) and EINTR.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveBeneath}
	for range 16 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}

// removeAt removes name in dirfd, recursively if it is a directory, never
// following a symlink. It reports whether a directory was removed.
func removeAt(dirfd int, name string) (bool, error) {
	err := unix.Unlinkat(dirfd, name, 0)
	switch err {
	case nil, unix.ENOENT:
		return false, nil
	case unix.EISDIR, unix.EPERM:
	default:
		return false, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return false, nil
		}
		return false, err
	}
	if err := removeChildren(fd, nil); err != nil {
		return true, err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return true, err
	}
	return true, nil
}

// removeChildren removes every entry of the directory fd for which keep
// (if not nil) returns false, then closes fd.
func removeChildren(fd int, keep func(name string) bool) error {
	d := os.NewFile(uintptr(fd), "dir")
	defer d.Close()
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			if keep != nil && keep(n) {
				continue
			}
			if _, err := removeAt(fd, n); err != nil {
				return err
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(names) == 0 {
			return nil
		}
	}
}

// checkPrivate refuses a cache directory that another user could write
// to: it must be a real directory (not a symlink), owned by this user, and
// not writable by group or others.
func checkPrivate(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("image: %w", &os.PathError{Op: "lstat", Path: dir, Err: err})
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("image: %s is not a directory: %w", dir, ErrCacheUnsafe)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("image: %s is owned by uid %d, not %d: %w", dir, st.Uid, os.Geteuid(), ErrCacheUnsafe)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("image: %s has mode %#o, writable by others: %w", dir, st.Mode&0o777, ErrCacheUnsafe)
	}
	return nil
}

// syncFS flushes the file system holding dir, so a renamed-in entry is
// never an incomplete tree after a crash.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("image: syncfs: %w", err)
	}
	return nil
}
