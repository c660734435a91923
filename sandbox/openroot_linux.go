package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openRoot prepares Config.Root for the init. As root it returns a
// detached, recursive, read-only clone of the tree (open_tree), which the
// init attaches in its own mount namespace whatever the permissions on
// the path to it. Rootless, where open_tree is refused, it returns the
// directory itself (O_PATH), which the init then reaches by its path: it
// runs as the calling user.
func openRoot(root string) (*os.File, bool, error) {
	if os.Geteuid() != 0 {
		fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, false, fmt.Errorf("sandbox: root %s: %w", root, err)
		}
		return os.NewFile(uintptr(fd), root), false, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return nil, false, fmt.Errorf("sandbox: root %s: %w", root, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, false, fmt.Errorf("sandbox: root %s: not a directory", root)
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, root, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return nil, false, fmt.Errorf("sandbox: root %s: clone: %w", root, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return nil, false, fmt.Errorf("sandbox: root %s: make the clone read-only: %w", root, err)
	}
	return os.NewFile(uintptr(fd), root), true, nil
}
