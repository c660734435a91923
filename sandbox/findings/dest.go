//go:build unix

package findings

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"golang.org/x/sys/unix"
)

// owner is who the copied entries are given to: rootful, the owner of
// the directory the findings directory is made in (or of the empty
// directory taken), so that a root run leaves no root-owned files in a
// user's tree; rootless, nobody (they are the caller's already).
type owner struct {
	set      bool
	uid, gid int
}

func (o owner) apply(fd int) error {
	if !o.set {
		return nil
	}
	return unix.Fchown(fd, o.uid, o.gid)
}

// Dest is the host's findings directory, held open from the sandbox's
// start to the copy-out.
type Dest struct {
	path    string
	dir     int // the findings directory (O_DIRECTORY)
	parent  int // the directory it is in, -1 for a bare "." or ".."
	base    string
	created bool // made by this run: removed again if the run never starts
	owner   owner
}

// OpenDest makes the findings directory p, with any missing parents, or
// takes p when it is an empty directory of the caller's (or, rootful, of
// the user whose directory it sits in). Anything else is refused: a path
// through a symbolic link, a file, a link, a directory that is not empty
// or belongs to someone else.
//
// A directory inside one of the trees readWrite binds writable is refused
// too, compared by real paths (the opened directory's and each tree's):
// the sandbox could write into it directly during the run, past every
// rule of the copy-out.
func OpenDest(p string, readWrite []string) (*Dest, error) {
	d := &Dest{path: p, dir: -1, parent: -1}
	err := outsideTrees(p, readWrite) // before anything is made
	if err == nil {
		err = d.open()
	}
	if err != nil {
		d.Discard()
		return nil, fmt.Errorf("findings directory %s: %w", Quote(p), err)
	}
	return d, nil
}

// outsideTrees refuses a findings path that lies in one of the readWrite
// trees, by the real path of its deepest existing directory and of each
// tree (the walk to it follows no link, so what is not there yet cannot
// lead elsewhere).
func outsideTrees(p string, readWrite []string) error {
	if len(readWrite) == 0 {
		return nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	rest := ""
	real, err := hostfile.Real(abs)
	for err != nil && abs != "/" {
		rest = filepath.Join(filepath.Base(abs), rest)
		abs = filepath.Dir(abs)
		real, err = hostfile.Real(abs)
	}
	if err != nil {
		return err
	}
	real = filepath.Join(real, rest)
	for _, rw := range readWrite {
		tree, err := hostfile.Real(rw)
		if err != nil {
			continue // the sandbox will not start with it anyway
		}
		if hostfile.Within(real, tree) {
			return fmt.Errorf("it is inside %s, which the policy's readWrite binds writable into the sandbox: "+
				"the sandbox could write there directly during the run; give a findings directory outside it", Quote(rw))
		}
	}
	return nil
}

func (d *Dest) open() error {
	clean := filepath.Clean(d.path)
	dir, base := filepath.Split(clean)
	if base == "." || base == ".." || base == "" {
		// "." or "..": only an existing directory will do.
		fd, err := openNoLinks(unix.AT_FDCWD, clean, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return walkErr(err)
		}
		d.dir = fd
		return d.accept(nil)
	}
	parent, ownerSt, err := walkParents(dir)
	if err != nil {
		return err
	}
	d.parent, d.base = parent, base
	switch err := unix.Mkdirat(parent, base, 0o755); {
	case err == nil:
		d.created = true
	case !errors.Is(err, unix.EEXIST):
		return fmt.Errorf("make it: %w", err)
	}
	fd, err := openNoLinks(parent, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return errors.New("it is a symbolic link: airlock writes findings only into a directory it makes, or an empty one")
	case errors.Is(err, unix.ENOTDIR):
		return errors.New("it exists and is not a directory: give a new path (airlock makes the directory) or an empty directory")
	case err != nil:
		return fmt.Errorf("open it: %w", err)
	}
	d.dir = fd
	return d.accept(ownerSt)
}

// accept checks the opened findings directory and works out the owner of
// what goes into it; parentSt is the stat of the directory it is in (nil
// for "." and "..").
func (d *Dest) accept(parentSt *unix.Stat_t) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.dir, &st); err != nil {
		return err
	}
	euid := os.Geteuid()
	switch {
	case d.created && int(st.Uid) != euid:
		return errors.New("it was replaced while airlock made it")
	case !d.created && int(st.Uid) != euid && (euid != 0 || parentSt == nil || st.Uid != parentSt.Uid):
		return fmt.Errorf("it exists and belongs to uid %d: airlock writes findings only into a directory it makes, or an empty one of its caller's", st.Uid)
	}
	_, more, err := ReadDirNames(d.dir, 0)
	if err != nil {
		return fmt.Errorf("read it: %w", err)
	}
	if more {
		return errors.New("it exists and is not empty: airlock writes findings only into a new directory (it makes it) or an empty one, so that nothing already there is overwritten or added to")
	}
	if euid == 0 {
		o := &st
		if d.created {
			o = parentSt
		}
		if o.Uid != 0 || o.Gid != 0 {
			d.owner = owner{set: true, uid: int(o.Uid), gid: int(o.Gid)}
		}
	}
	return nil
}

// walkParents opens the directory dir ("" for the working directory) one
// component at a time, never following a symbolic link, making missing
// components (0755, given to the owner of the deepest existing one when
// rootful), and returns it (pathOnly) with the stat of that owner.
func walkParents(dir string) (int, *unix.Stat_t, error) {
	start := "."
	if filepath.IsAbs(dir) {
		start = "/"
	}
	cur, err := openNoLinks(unix.AT_FDCWD, start, pathOnly|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, nil, walkErr(err)
	}
	var o unix.Stat_t
	if err := unix.Fstat(cur, &o); err != nil {
		unix.Close(cur)
		return -1, nil, err
	}
	for _, comp := range strings.Split(dir, "/") {
		if comp == "" || comp == "." {
			continue
		}
		next, err := openNoLinks(cur, comp, pathOnly|unix.O_DIRECTORY, 0)
		made := false
		if errors.Is(err, unix.ENOENT) && comp != ".." {
			if err = unix.Mkdirat(cur, comp, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				made = err == nil
				next, err = openNoLinks(cur, comp, pathOnly|unix.O_DIRECTORY, 0)
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, nil, walkErr(err)
		}
		cur = next
		if made && os.Geteuid() == 0 {
			err = fchown(cur, int(o.Uid), int(o.Gid))
		} else if !made {
			err = unix.Fstat(cur, &o)
		}
		if err != nil {
			unix.Close(cur)
			return -1, nil, err
		}
	}
	return cur, &o, nil
}

// walkErr words an error of the walk to the findings directory.
func walkErr(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return errors.New("a component of the path is a symbolic link: airlock follows none on the way to the findings directory (give the path without links, e.g. from realpath, if you trust them)")
	case errors.Is(err, unix.ENOTDIR):
		return errors.New("a component of the path is not a directory")
	case errors.Is(err, unix.ENOSYS):
		return errors.New("the kernel has no openat2(2) (Linux 5.6 or later), which the findings copy needs to resolve paths without following links")
	}
	return err
}

// Discard closes the destination; one this run made is removed again if
// it is still empty (the run never started, so it never held findings).
func (d *Dest) Discard() {
	if d.created && d.parent >= 0 {
		unix.Unlinkat(d.parent, d.base, unix.AT_REMOVEDIR)
	}
	d.Close()
}

// Close closes the destination.
func (d *Dest) Close() {
	for _, fd := range []*int{&d.dir, &d.parent} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
