//go:build unix && !linux

package findings

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// pathOnly opens a directory on the way to the findings directory (no
// O_PATH here: it is opened for reading).
const pathOnly = unix.O_RDONLY

// openNoLinks opens name under dirfd one component at a time, none of
// them followed if it is a symbolic link.
func openNoLinks(dirfd int, name string, flags int, mode uint32) (int, error) {
	comps := strings.Split(name, "/")
	cur := dirfd
	if strings.HasPrefix(name, "/") {
		comps[0] = "/"
	}
	comps = dropEmpty(comps)
	if len(comps) == 0 {
		comps = []string{"."}
	}
	for i, c := range comps {
		f, m := unix.O_RDONLY|unix.O_DIRECTORY, uint32(0)
		if i == len(comps)-1 {
			f, m = flags, mode
		}
		next, err := openat(cur, c, f, m)
		if cur != dirfd {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

func dropEmpty(s []string) []string {
	out := s[:0]
	for _, c := range s {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// openBeneath opens the entry name of dirfd, not following it if it is
// a symbolic link.
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	return openat(dirfd, name, flags, mode)
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
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
