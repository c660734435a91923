package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/mountinfo"
)

// Checker checks host paths against this host's mounts, read once by
// NewChecker: a path is refused when its real path is, or when its tree
// (or a mount below it) is a refused tree's filesystem seen from
// elsewhere.
type Checker struct {
	mounts []mountinfo.Mount
	banned []place
}

// place is a refused host path as a place in a filesystem: the device of
// the mount it is on and its path within that filesystem.
type place struct {
	dev, path string
	tree      bool   // everything under it is refused too
	name      string // the refused host path it stands for
}

// kernelFS are filesystem types that are kernel interfaces: a tree with
// one of them mounted in it is refused wherever it is.
var kernelFS = []string{"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue", "debugfs",
	"tracefs", "securityfs", "bpf", "configfs", "pstore", "efivarfs", "binfmt_misc", "fusectl", "nsfs"}

// NewChecker reads the calling thread's mount table and finds where each
// refused path of this host lives. A refused path that does not exist
// here is skipped; one that cannot be looked at is an error (the checks
// would not be whole).
func NewChecker() (*Checker, error) {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("hostpath: read the mount table: %w", err)
	}
	c := &Checker{}
	if c.mounts, err = mountinfo.Parse(b); err != nil {
		return nil, err
	}
	for _, bans := range []struct {
		paths []string
		tree  bool
	}{{trees, true}, {exact, false}} {
		for _, p := range bans.paths {
			if err := c.ban(p, bans.tree); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// ban adds the places of the refused path p: where it is, and, for a
// tree, every mount below it.
func (c *Checker) ban(p string, tree bool) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hostpath: look at %s: %w", p, err)
	}
	defer unix.Close(fd)
	m, fsPath, real, err := c.where(fd)
	if err != nil {
		return fmt.Errorf("hostpath: %s: %w", p, err)
	}
	c.banned = append(c.banned, place{dev: m.Dev, path: fsPath, tree: tree, name: p})
	if tree {
		for _, s := range c.below(real, m.ID) {
			c.banned = append(c.banned, place{dev: s.Dev, path: s.Root, tree: true, name: p})
		}
	}
	return nil
}

// Check refuses p as a ReadOnly or ReadWrite entry: its words, then the
// tree it names on this host, every symbolic link followed. A path that
// does not exist is checked as far as it does.
func (c *Checker) Check(field, p string) error { return c.check(field, p, true) }

// CheckBind refuses host as a Bind's host path (shown elsewhere inside):
// its words and tree as Check does, with the refused trees only.
func (c *Checker) CheckBind(host string) error { return c.check("bind", host, false) }

func (c *Checker) check(field, p string, view bool) error {
	if err := checkWords(field, p, view); err != nil {
		return err
	}
	fd, rest, err := openDeepest(p)
	if err != nil {
		return fmt.Errorf("%s %q: %w", field, p, err)
	}
	defer unix.Close(fd)
	return c.checkFD(field, p, fd, rest, view)
}

// CheckOpened refuses the tree open at fd (O_PATH), which the caller
// opened for p and is about to bind: its real path, its place and the
// mounts below it. view is as for Check (true) or CheckBind (false).
// What is checked is what the descriptor holds, whatever p names now.
func (c *Checker) CheckOpened(field, p string, fd int, view bool) error {
	return c.checkFD(field, p, fd, "", view)
}

// checkFD checks the tree at fd joined with rest (the part of the path
// that does not exist yet).
func (c *Checker) checkFD(field, p string, fd int, rest string, view bool) error {
	m, fsPath, real, err := c.where(fd)
	if err != nil {
		return fmt.Errorf("%s %q: %w", field, p, err)
	}
	real, fsPath = path.Join(real, rest), path.Join(fsPath, rest)
	if why := refused(real, view); why != "" && real != p {
		return fmt.Errorf("%s %q: refusing to bind it: its real path is %s (%s)", field, p, real, why)
	}
	if why := c.refusedMount(m, fsPath, view); why != "" {
		return fmt.Errorf("%s %q: refusing to bind it: %s", field, p, why)
	}
	for _, s := range c.below(real, m.ID) {
		if why := c.refusedMount(s, s.Root, view); why != "" {
			return fmt.Errorf("%s %q: refusing to bind it: the mount at %s below it: %s", field, p, s.Point, why)
		}
	}
	return nil
}

// refusedMount says why the tree at fsPath of mount m may not be shown,
// "" when it may.
func (c *Checker) refusedMount(m mountinfo.Mount, fsPath string, view bool) string {
	if slices.Contains(kernelFS, m.FSType) {
		return "it is a " + m.FSType + " filesystem, a kernel interface"
	}
	for _, b := range c.banned {
		switch {
		case b.dev != m.Dev:
		case b.tree && (within(fsPath, b.path) || within(b.path, fsPath)):
			return fmt.Sprintf("it shows the host's %s (%s), mounted elsewhere", b.name, whyTree)
		case !b.tree && view && fsPath == b.path:
			return fmt.Sprintf("it is the host's %s (%s), mounted elsewhere", b.name, whyExact)
		}
	}
	return ""
}

// below lists the mounts other than id whose mount point is under real.
func (c *Checker) below(real string, id uint64) []mountinfo.Mount {
	var out []mountinfo.Mount
	for _, s := range c.mounts {
		if s.ID != id && s.Point != real && within(s.Point, real) {
			out = append(out, s)
		}
	}
	return out
}

// where returns the mount fd is on, fd's path within that mount's
// filesystem, and its real path in this mount namespace.
func (c *Checker) where(fd int) (mountinfo.Mount, string, string, error) {
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return mountinfo.Mount{}, "", "", fmt.Errorf("its real path: %w", err)
	}
	id, err := mountID(fd)
	if err != nil {
		return mountinfo.Mount{}, "", "", err
	}
	i := slices.IndexFunc(c.mounts, func(m mountinfo.Mount) bool { return m.ID == id })
	if i < 0 {
		return mountinfo.Mount{}, "", "", fmt.Errorf("its mount %d is not in the mount table", id)
	}
	m := c.mounts[i]
	if !path.IsAbs(real) || !within(real, m.Point) {
		return mountinfo.Mount{}, "", "", fmt.Errorf("its real path %q is not under its mount point %s", real, m.Point)
	}
	return m, path.Join(m.Root, strings.TrimPrefix(real, m.Point)), real, nil
}

// mountID returns the id of the mount fd is on: from statx (Linux 5.8),
// else from /proc/self/fdinfo.
func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx) == nil && stx.Mask&unix.STATX_MNT_ID != 0 {
		return stx.Mnt_id, nil
	}
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, fmt.Errorf("its mount: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("its mount: bad mnt_id %q", v)
			}
			return id, nil
		}
	}
	return 0, errors.New("its mount: no mnt_id in fdinfo")
}

// openDeepest opens p with O_PATH, every symbolic link followed, or,
// when p does not exist (or cannot be reached), its deepest ancestor that
// can; rest is the part of p below what was opened.
func openDeepest(p string) (fd int, rest string, err error) {
	for at := p; ; at = path.Dir(at) {
		fd, err := unix.Open(at, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == nil {
			return fd, strings.TrimPrefix(strings.TrimPrefix(p, at), "/"), nil
		}
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.ENOTDIR) || at == "/" {
			return -1, "", fmt.Errorf("open %s: %w", at, err)
		}
	}
}
