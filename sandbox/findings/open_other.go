//go:build unix && !linux

package findings

import "golang.org/x/sys/unix"

// pathOnly opens a directory on the way to the findings directory (no
// O_PATH here: it is opened for reading).
const pathOnly = unix.O_RDONLY

// openNoLinks opens name under dirfd (openEach).
func openNoLinks(dirfd int, name string, flags int, mode uint32) (int, error) {
	return openEach(dirfd, name, flags, mode)
}

// openBeneath opens the entry name of dirfd, not following it if it is
// a symbolic link.
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	return openat(dirfd, name, flags, mode)
}

// fchown gives the directory fd to uid and gid.
func fchown(fd, uid, gid int) error { return unix.Fchown(fd, uid, gid) }

// renameNoReplace renames old to new in the directory fd, unless new
// exists (checked first: the sandbox that could make it is dead).
func renameNoReplace(fd int, old, new string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, new, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return unix.EEXIST
	}
	return unix.Renameat(fd, old, fd, new)
}
