//go:build unix

package privstate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Dirs makes (0700) and opens base/names[0]/names[1]/…, one component at
// a time from the one before (openat, O_NOFOLLOW), and checks each: base
// must be a directory that only its owner, the caller or root, can write
// into (or a sticky one); every component under it a directory, not a
// link, owned by the caller, with no access for group or others. It
// returns the path of the last.
func Dirs(base string, names ...string) (string, error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("state directory %s: %w", base, err)
	}
	defer func() { unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("state directory %s: %w", base, err)
	}
	euid := uint32(os.Geteuid())
	if mode := uint32(st.Mode); st.Uid != euid && st.Uid != 0 || mode&0o022 != 0 && mode&unix.S_ISVTX == 0 {
		return "", fmt.Errorf("state directory %s is owned by uid %d or writable by others (mode %o): another user could replace what airlock keeps there; set $XDG_STATE_HOME to a directory of your own",
			base, st.Uid, uint32(st.Mode)&0o7777)
	}
	path := base
	for _, name := range names {
		path = filepath.Join(path, name)
		if err := unix.Mkdirat(fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return "", fmt.Errorf("%s is a symbolic link or not a directory: airlock keeps its private state only in a real directory of its own; remove it", path)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		unix.Close(fd)
		fd = next
		if err := unix.Fstat(fd, &st); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if err := narrow(fd, path, &st); err != nil {
			return "", err
		}
		if err := private(path, st.Uid, uint32(st.Mode)); err != nil {
			return "", err
		}
	}
	return path, nil
}

// narrow closes a directory of the caller's that group or others may
// read or enter, but not write: an older airlock (or a mkdir -p) made
// the state directory 0755. Nothing there could have been replaced by
// anyone else, and every file in it is still checked on its own, so the
// directory is made 0700 rather than refused. One that others may write
// into is left as it is, and refused.
func narrow(fd int, path string, st *unix.Stat_t) error {
	mode := uint32(st.Mode)
	if st.Uid != uint32(os.Geteuid()) || mode&0o077 == 0 || mode&0o022 != 0 {
		return nil
	}
	if err := unix.Fchmod(fd, mode&0o700); err != nil {
		return fmt.Errorf("%s: close it to group and others: %w", path, err)
	}
	return unix.Fstat(fd, st)
}

// private checks that a file or directory belongs to the caller and is
// closed to group and others.
func private(path string, uid, mode uint32) error {
	if uid != uint32(os.Geteuid()) {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d): airlock keeps its private state only where no one else can write", path, uid, os.Geteuid())
	}
	if mode&0o077 != 0 {
		return fmt.Errorf("%s is open to group or others (mode %o): airlock keeps its private state only where no one else can read or write; run chmod go= %s", path, mode&0o777, path)
	}
	return nil
}

// CheckDir checks that dir is a private directory of the caller's, and
// not a link to one.
func CheckDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is a symbolic link or not a directory: airlock keeps its private state only in a real directory", dir)
	}
	return private(dir, st.Uid, uint32(st.Mode))
}

// ReadPrivate reads the regular file at path, of at most max bytes,
// without following a link and without blocking on a FIFO, and checks that
// it is the caller's and private. A missing file is fs.ErrNotExist.
func ReadPrivate(path string, max int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, which airlock never writes", path)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("%s is not a regular file, which airlock never writes", path)
	case st.Size > max:
		return nil, fmt.Errorf("%s has %d bytes, more than the %d it may hold", path, st.Size, max)
	}
	if err := private(path, st.Uid, uint32(st.Mode)); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// CreateExcl creates path for writing, 0600, failing if anything is there
// (a file, a link, a FIFO).
func CreateExcl(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
}

// SyncDir makes the entries just linked or renamed into dir durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
