//go:build unix

package findings

import (
	"errors"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// openEach opens name under dirfd one component at a time, none of
// them followed if it is a symbolic link: openNoLinks where there is no
// openat2 (tested on Linux too).
func openEach(dirfd int, name string, flags int, mode uint32) (int, error) {
	comps := strings.Split(name, "/")
	cur := dirfd
	if strings.HasPrefix(name, "/") {
		comps[0] = "/"
	}
	comps = slices.DeleteFunc(comps, func(c string) bool { return c == "" })
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

// openat opens the entry name of dirfd, not following it if it is a
// symbolic link.
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
