package initproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/hostpath"
	"golang.org/x/sys/unix"
)

// newRootAt is where the init mounts the sandbox's root tmpfs before it
// pivots into it. Every host tree the sandbox sees is cloned (open_tree)
// before this mount covers the host's /tmp, so nothing below it is lost.
const newRootAt = "/tmp"

// The sandbox's /dev: the host's nodes bound in, nothing else.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

var devLinks = [][2]string{
	{"/proc/self/fd", "fd"},
	{"/proc/self/fd/0", "stdin"},
	{"/proc/self/fd/1", "stdout"},
	{"/proc/self/fd/2", "stderr"},
}

// mountSource is one host tree to show inside: a detached clone of it, or
// the symbolic link to recreate.
type mountSource struct {
	inside string // absolute path inside
	tree   int    // open_tree clone, -1 for a link or a masked path
	link   string // link target when the host path is a symbolic link
	isDir  bool
}

// buildRoot prepares the new root under newRootAt and returns its path.
// The mount namespace is this init's own: nothing here reaches the host's.
func (s *initState) buildRoot(setup io.Reader) (string, error) {
	srcs, err := s.cloneSources()
	defer func() {
		for _, m := range srcs {
			if m.tree >= 0 {
				unix.Close(m.tree)
			}
		}
	}()
	if err != nil {
		return "", err
	}
	root := newRootAt
	if err := mountTmpfs(root, unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return "", fmt.Errorf("root tmpfs: %w", err)
	}
	for _, dir := range ownTopDirs {
		if err := os.Mkdir(root+"/"+dir, 0o755); err != nil {
			return "", fmt.Errorf("make /%s: %w", dir, err)
		}
	}
	if err := s.buildAirlockDir(root + "/.airlock"); err != nil {
		return "", err
	}
	for _, m := range srcs {
		if err := attach(root, m); err != nil {
			return "", err
		}
	}
	if err := s.hide(root); err != nil {
		return "", err
	}
	if err := s.ownIdentity(root); err != nil {
		return "", err
	}
	disk, err := s.mountDisk(root)
	if err != nil {
		return "", err
	}
	defer func() {
		for _, fd := range disk {
			unix.Close(fd)
		}
	}()
	for _, d := range []string{TmpDir, WorkspaceDir, FindingsDir} {
		if err := attachDisk(disk, root, d); err != nil {
			return "", err
		}
	}
	if s.cfg.Workspace {
		if err := extractWorkspace(setup, root+WorkspaceDir, s.cfg.TmpfsBytes); err != nil {
			return "", fmt.Errorf("copy the workspace in: %w", err)
		}
	}
	if err := s.buildDev(root, disk); err != nil {
		return "", err
	}
	if err := s.mountProc(root); err != nil {
		return "", err
	}
	if err := ownProc(root); err != nil {
		return "", err
	}
	s.receipt["filesystem"] = "tmpfs root (read-only), read-only binds, private /tmp /workspace /findings /dev/shm on one tmpfs, pivot_root"
	if s.cfg.Root {
		s.receipt["filesystem"] = "tmpfs root (read-only) holding the image root's entries bound read-only, private /tmp /workspace /findings /dev/shm on one tmpfs, pivot_root"
	}
	return root, nil
}

// What the init checks of a host tree before it clones it (package
// hostpath, on the descriptor it clones): nothing for an image root's
// entries (not host paths) and a test hole's, every rule for a view entry
// (ReadOnly, ReadWrite), the refused trees for a Bind.
const (
	checkNone = iota
	checkView
	checkBind
)

// cloneSources clones every host tree the sandbox will see, before the
// root tmpfs covers anything. Missing ReadOnly paths are skipped (they
// expose nothing); missing ReadWrite paths and binds are errors. Each
// path is opened once, following the symbolic links on its way but not a
// last one (recreated as the same link inside), and what that descriptor
// holds is checked and cloned: no path swapped after the check gets in.
func (s *initState) cloneSources() ([]mountSource, error) {
	var srcs []mountSource
	var chk *hostpath.Checker
	add := func(field, host, inside string, ro, optional bool, check int) error {
		if host == SelfExe {
			return nil // copied in by copySelf
		}
		fd, err := unix.Open(host, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && optional {
			return nil
		}
		if err != nil {
			return fmt.Errorf("bind %s: %w", host, err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("bind %s: %w", host, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := readlinkFD(fd)
			if err != nil {
				return fmt.Errorf("bind %s: %w", host, err)
			}
			srcs = append(srcs, mountSource{inside: inside, tree: -1, link: target})
			return nil
		}
		if check != checkNone {
			if chk == nil {
				if chk, err = hostpath.NewChecker(); err != nil {
					return err
				}
			}
			if err := chk.CheckOpened(field, host, fd, check == checkView); err != nil {
				return err
			}
		}
		tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return fmt.Errorf("clone %s: %w", host, err)
		}
		srcs = append(srcs, mountSource{inside: inside, tree: tree, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if ro {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fmt.Errorf("make %s read-only, nosuid, nodev: %w", host, err)
		}
		return nil
	}
	if s.cfg.Root {
		base, detach, err := s.rootBase()
		if err != nil {
			return srcs, err
		}
		names, err := rootEntries(base)
		for _, name := range names {
			if err == nil {
				err = add("root", base+"/"+name, "/"+name, true, true, checkNone)
			}
		}
		if derr := detach(); err == nil {
			err = derr
		}
		if err != nil {
			return srcs, err
		}
	}
	for _, p := range s.cfg.ReadOnly {
		if err := add("readOnly", p, p, true, true, checkView); err != nil {
			return srcs, err
		}
	}
	if s.hole != nil {
		for _, p := range s.hole.HostDirs {
			if err := add("hole", p, p, true, true, checkNone); err != nil {
				return srcs, err
			}
		}
	}
	for _, p := range s.cfg.ReadWrite {
		if err := add("readWrite", p, p, false, false, checkView); err != nil {
			return srcs, err
		}
	}
	for _, b := range s.cfg.Binds {
		if err := add("bind", b.Host, b.Inside, true, false, checkBind); err != nil {
			return srcs, err
		}
	}
	// Parents before children, so that a nested bind lands on top.
	slices.SortStableFunc(srcs, func(a, b mountSource) int { return len(a.inside) - len(b.inside) })
	return srcs, nil
}

// readlinkFD reads the target of the symbolic link open at fd (O_PATH
// and O_NOFOLLOW).
func readlinkFD(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// rootBase returns the path, in the init's mount namespace, of the tree
// Config.Root names, and a function that undoes whatever made it
// reachable. Rootful, the parent passed a detached clone of that tree
// (the path may sit in a directory uid 65534 cannot enter, such as root's
// 0700 image cache): it is attached at newRootAt until its entries are
// cloned. Rootless, the init runs as the calling user and reaches the
// path itself.
func (s *initState) rootBase() (string, func() error, error) {
	if s.cfg.RootPath != "" {
		unix.Close(fdRoot) // only held the directory while the init started
		return s.cfg.RootPath, func() error { return nil }, nil
	}
	if err := unix.MoveMount(fdRoot, "", unix.AT_FDCWD, newRootAt, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", nil, fmt.Errorf("attach the root tree: %w", err)
	}
	unix.Close(fdRoot)
	return newRootAt, func() error {
		if err := unix.Unmount(newRootAt, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("detach the root tree: %w", err)
		}
		return nil
	}, nil
}

// rootEntries lists the top-level names of an image root that the sandbox
// shows: all but the directories it makes itself and the image's homes
// (/root, /home), which the sandbox never shows, from an image or the host:
// HOME is /workspace, and the start-up probes check that no home is there.
func rootEntries(base string) ([]string, error) {
	d, err := os.Open(base)
	if err != nil {
		return nil, fmt.Errorf("list the root: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list the root: %w", err)
	}
	out := names[:0]
	for _, n := range names {
		if !slices.Contains(ownTopDirs, n) && n != "root" && n != "home" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ownTopDirs are the top-level directories the sandbox makes itself.
var ownTopDirs = []string{"proc", "dev", "tmp", "workspace", "findings", ".airlock"}

// attach puts one cloned tree (or link) at its place under root.
func attach(root string, m mountSource) error {
	dst := root + m.inside
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("make parent of %s: %w", m.inside, err)
	}
	if m.tree < 0 {
		if err := os.Symlink(m.link, dst); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("link %s: %w", m.inside, err)
		}
		return nil
	}
	if err := makeMountPoint(dst, m.isDir); err != nil {
		return fmt.Errorf("mount point %s: %w", m.inside, err)
	}
	if err := unix.MoveMount(m.tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach %s: %w", m.inside, err)
	}
	return nil
}

// makeMountPoint creates dst as an empty directory or file unless it
// exists (a nested bind's mount point inside a bound tree).
func makeMountPoint(dst string, dir bool) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if dir {
		return os.Mkdir(dst, 0o755)
	}
	return os.WriteFile(dst, nil, 0o444)
}

// hide masks each Hide path that is visible inside: an empty read-only
// tmpfs over a directory, the empty file over a file. A path the init
// cannot reach (a bound tree's directory closed to its uid) is left: the
// init has the target's uid and groups, so the target cannot reach it
// either.
func (s *initState) hide(root string) error {
	for _, p := range s.cfg.Hide {
		dst := root + p
		st, err := os.Lstat(dst)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			continue
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		switch {
		case st.IsDir():
			err = mountTmpfs(dst, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0555,size=4k,nr_inodes=1")
		case st.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("hide %s: it is a symbolic link inside the sandbox; hide its target", p)
		default:
			err = unix.Mount(root+"/.airlock/empty", dst, "", unix.MS_BIND, "")
			if err == nil {
				err = unix.MountSetattr(unix.AT_FDCWD, dst, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC})
			}
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	return nil
}

// buildDev makes the minimal /dev: a tmpfs with the host's null, zero,
// full, random and urandom bound in, the /proc/self/fd links and /dev/shm
// from the writable tmpfs (disk). No tty, no pts, no block device.
func (s *initState) buildDev(root string, disk map[string]int) error {
	dev := root + "/dev"
	if err := mountTmpfs(dev, unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range devNodes {
		dst := dev + "/" + n
		if err := os.WriteFile(dst, nil, 0o444); err != nil {
			return fmt.Errorf("make /dev/%s: %w", n, err)
		}
		if err := unix.Mount("/dev/"+n, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, dst, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC}); err != nil {
			return fmt.Errorf("flags of /dev/%s: %w", n, err)
		}
	}
	for _, l := range devLinks {
		if err := os.Symlink(l[0], dev+"/"+l[1]); err != nil {
			return fmt.Errorf("link /dev/%s: %w", l[1], err)
		}
	}
	if err := os.Mkdir(dev+"/shm", 0o755); err != nil {
		return fmt.Errorf("make /dev/shm: %w", err)
	}
	if err := attachDisk(disk, root, "/dev/shm"); err != nil {
		return err
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dev, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make /dev read-only: %w", err)
	}
	return nil
}

// enterRoot pivots into root, detaches the host's tree and makes the
// root tmpfs read-only.
func (s *initState) enterRoot(root string) error {
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("chdir %s: %w", root, err)
	}
	// pivot_root(".", ".") stacks the old root under the new one; the
	// detach below drops it, so no path inside leads back to the host.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
		return fmt.Errorf("make / read-only: %w", err)
	}
	// No nested user namespace (the one way to regain capabilities, if
	// only inside the sandbox), enforced by the kernel whatever the
	// seccomp filter allows.
	if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err == nil {
		s.receipt["nested_namespaces"] = "user.max_user_namespaces=0 inside"
	} else if !s.nestedUserNSRefused(err) {
		return fmt.Errorf("forbid nested user namespaces: %w", err)
	}
	if err := boundUserCounts(); err == nil {
		s.receipt["user_counts"] = userCountsReceipt
	} else if !s.userCountsRefused(err) {
		return err
	}
	if s.cfg.Hostname != "" {
		if err := unix.Sethostname([]byte(s.cfg.Hostname)); err != nil && !s.hostnameRefused(err) {
			return fmt.Errorf("sethostname: %w", err)
		}
	}
	return nil
}

// userCounts bound what the kernel counts per user in the sandbox's user
// namespace: each is charged, at every level up to the host's, to the
// namespace's owner too (root, or a rootless caller), whose own limit is
// the host's default. Unbounded, a sandbox that took 128 inotify
// instances left host root none.
var userCounts = [][2]string{
	{"max_inotify_instances", "16"},
	{"max_inotify_watches", "8192"},
	{"max_fanotify_groups", "0"},
	{"max_fanotify_marks", "0"},
}

const userCountsReceipt = "user.max_inotify_instances=16, max_inotify_watches=8192, max_fanotify_groups=0, max_fanotify_marks=0 inside (each also counted against the namespace owner's host limits)"

// boundUserCounts writes userCounts for the init's user namespace.
func boundUserCounts() error {
	for _, kv := range userCounts {
		err := os.WriteFile("/proc/sys/user/"+kv[0], []byte(kv[1]), 0)
		if errors.Is(err, os.ErrNotExist) && strings.HasPrefix(kv[0], "max_fanotify") {
			continue // a kernel without fanotify
		}
		if err != nil {
			return fmt.Errorf("bound user.%s: %w", kv[0], err)
		}
	}
	return nil
}

func mountTmpfs(dst string, flags uintptr, data string) error {
	return unix.Mount("tmpfs", dst, "tmpfs", flags, data)
}

// openSelf opens the calling binary: the descriptor the parent passed
// (SelfArg: this init is airlock-init), else the binary this init runs
// from.
func openSelf() (*os.File, error) {
	if fd := selfFD(); fd >= 0 {
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), "airlock-self"), nil
	}
	return os.Open(SelfExe)
}

// buildAirlockDir makes /.airlock, a small read-only tmpfs with the empty
// file that masks hidden files, the sandbox's own identity files (id/,
// identity_linux.go) and, for BindSelf, a copy of the calling binary
// (openSelf). A copy, not a bind: the init's executable belongs to
// the host's mount namespace (open_tree refuses it), its directory may be
// closed to uid 65534, and a copy leaves no path to the host's file.
func (s *initState) buildAirlockDir(dir string) error {
	self := false
	for _, b := range s.cfg.Binds {
		self = self || b.Host == SelfExe
	}
	size := int64(64 << 10)
	var exe *os.File
	if self {
		f, err := openSelf()
		if err != nil {
			return fmt.Errorf("open own binary: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("stat own binary: %w", err)
		}
		exe, size = f, size+st.Size()
	}
	if err := mountTmpfs(dir, unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,nr_inodes=32,size="+strconv.FormatInt(size, 10)); err != nil {
		return fmt.Errorf("mount /.airlock: %w", err)
	}
	if err := os.WriteFile(dir+"/empty", nil, 0o444); err != nil {
		return fmt.Errorf("make mask file: %w", err)
	}
	if err := s.writeIdentity(dir + "/id"); err != nil {
		return err
	}
	if exe != nil {
		out, err := os.OpenFile(dir+"/self", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o555)
		if err != nil {
			return fmt.Errorf("copy own binary: %w", err)
		}
		_, err = io.Copy(out, exe)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("copy own binary: %w", err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dir, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make /.airlock read-only: %w", err)
	}
	return nil
}
