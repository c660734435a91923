package findings

import (
	"errors"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// pathOnly opens a directory on the way to the findings directory
// without reading it.
const pathOnly = unix.O_PATH

// openNoLinks opens name under dirfd without following any link (or
// /proc magic link) anywhere on it. ".." and mount points are allowed:
// they cannot take the walk anywhere the path does not name.
func openNoLinks(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode),
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
}

// openBeneath opens the entry name of dirfd: no link followed, no mount
// crossed.
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	return initproc.OpenBeneath(dirfd, name, flags, mode)
}

// fchown gives the directory fd (opened pathOnly) to uid and gid.
func fchown(fd, uid, gid int) error {
	return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH)
}

// renameNoReplace renames old to new in the directory fd, unless new
// exists.
func renameNoReplace(fd int, old, new string) error {
	return unix.Renameat2(fd, old, fd, new, unix.RENAME_NOREPLACE)
}
