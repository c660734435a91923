package initproc

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's writable space is one tmpfs, sized by the disk cap
// (Config.TmpfsBytes) and with an inode cap derived from it, that holds
// /tmp, /workspace, /findings and /dev/shm as four directories, each
// bound into place: the cap holds for the four together, the workspace's
// copy included (docs/sandbox.md, "Caps").

// diskDir is one directory of the writable tmpfs.
type diskDir struct {
	name   string // its name on the tmpfs
	inside string // where it is bound
	mode   uint32
	noexec bool
}

var diskDirs = []diskDir{
	{"tmp", TmpDir, 0o1777, false},
	{"workspace", WorkspaceDir, 0o755, false},
	{"findings", FindingsDir, 0o755, true},
	{"shm", "/dev/shm", 0o1777, true},
}

// DiskInodes is the inode cap of the writable tmpfs of size bytes: one
// inode per 4 KiB of it (any file with content takes at least a page of
// the size cap anyway), at least 1024. It bounds what the entries the
// size cap does not count — empty files, directories, links — cost in
// kernel memory: about 1 KiB each, so at most a quarter of the size cap.
func DiskInodes(size int64) int64 { return max(size/4096, 1024) }

// mountDisk mounts the writable tmpfs where the root's /tmp will be,
// makes its directories, and returns a detached clone of each, by inside
// path; the tmpfs's own mount is gone again, its directories live on in
// the clones.
func (s *initState) mountDisk(root string) (map[string]int, error) {
	stage := root + TmpDir
	id, inodes := s.id(), DiskInodes(s.cfg.TmpfsBytes)
	opts := fmt.Sprintf("mode=0755,size=%d,nr_inodes=%d,uid=%d,gid=%d", s.cfg.TmpfsBytes, inodes, id, id)
	if err := mountTmpfs(stage, unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("mount the writable tmpfs: %w", err)
	}
	trees := map[string]int{}
	fail := func(err error) (map[string]int, error) {
		for _, fd := range trees {
			unix.Close(fd)
		}
		unix.Unmount(stage, unix.MNT_DETACH)
		return nil, err
	}
	for _, d := range diskDirs {
		p := stage + "/" + d.name
		if err := os.Mkdir(p, 0o700); err != nil {
			return fail(fmt.Errorf("make %s: %w", d.inside, err))
		}
		if err := unix.Chmod(p, d.mode); err != nil {
			return fail(fmt.Errorf("mode of %s: %w", d.inside, err))
		}
		tree, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fail(fmt.Errorf("clone %s: %w", d.inside, err))
		}
		trees[d.inside] = tree
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if d.noexec {
			attr.Attr_set |= unix.MOUNT_ATTR_NOEXEC
		}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return fail(fmt.Errorf("flags of %s: %w", d.inside, err))
		}
	}
	// HOME, the sandbox user's own: in /tmp, so that what programs keep
	// there stays out of /workspace and inside the cap.
	home := stage + "/tmp" + strings.TrimPrefix(HomeDir, TmpDir)
	if err := os.Mkdir(home, 0o700); err != nil {
		return fail(fmt.Errorf("make %s: %w", HomeDir, err))
	}
	if err := unix.Chown(home, id, id); err != nil {
		return fail(fmt.Errorf("owner of %s: %w", HomeDir, err))
	}
	if err := unix.Unmount(stage, unix.MNT_DETACH); err != nil {
		return fail(fmt.Errorf("detach the writable tmpfs: %w", err))
	}
	s.receipt["disk"] = fmt.Sprintf("one tmpfs of %d bytes and %d inodes for /tmp, /workspace (its copy included), /findings and /dev/shm together; RLIMIT_FSIZE for any one file", s.cfg.TmpfsBytes, inodes)
	return trees, nil
}

// attachDisk moves the clone of inside's directory to root+inside.
func attachDisk(trees map[string]int, root, inside string) error {
	if err := unix.MoveMount(trees[inside], "", unix.AT_FDCWD, root+inside, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach %s: %w", inside, err)
	}
	return nil
}
