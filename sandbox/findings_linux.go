package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// The findings copy-out (docs/sandbox.md, "Findings"). The host side is
// resolved and written by descriptor only: the findings directory is made
// (or an empty one of the caller's taken) when the sandbox starts, every
// path on the way to it is walked without following a symbolic link,
// every entry below it is created new (O_EXCL, never through a link or an
// existing file), and files come out as data (their read and write bits
// only: no exec, setuid, setgid or sticky bit). The sandbox side is read by descriptor too, from
// the /findings tmpfs, after every process inside is dead.

// maxFindingsEntries bounds the entries copied out of /findings.
const maxFindingsEntries = 10000

// noLinks is how the path to the findings directory is walked: a
// symbolic link (or a /proc magic link) anywhere on it is refused, never
// followed. ".." and mount points are allowed: they cannot take the walk
// anywhere the path does not name.
const noLinks = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// vcsNames are entry names copied out under another name (renamedSuffix
// added), in any case: an entry of that name makes git (or hg) read the
// directory as a repository, whose config and hooks run commands on the
// host when someone (or a shell prompt) runs the tool there. So is the
// HEAD of a directory that also holds objects and refs, the shape of a
// bare git repository.
var vcsNames = []string{".git", ".hg"}

// renamedSuffix is added to the name of an entry copied out renamed.
const renamedSuffix = "-renamed-by-airlock"

// findingsOwner is who the copied entries are given to: rootful, the
// owner of the directory the findings directory is made in (or of the
// empty directory taken), so that a root run leaves no root-owned files
// in a user's tree; rootless, nobody (they are the caller's already).
type findingsOwner struct {
	set      bool
	uid, gid int
}

func (o findingsOwner) apply(fd int) error {
	if !o.set {
		return nil
	}
	return unix.Fchown(fd, o.uid, o.gid)
}

// findingsDest is the host's findings directory, held open from Start to
// the copy-out.
type findingsDest struct {
	path    string
	dir     int // the findings directory (O_DIRECTORY)
	parent  int // the directory it is in (O_PATH), -1 for a bare "." or ".."
	base    string
	created bool // made by this run: removed again if the run never starts
	owner   findingsOwner
}

// openFindingsDest makes the findings directory p, with any missing
// parents, or takes p when it is an empty directory of the caller's (or,
// rootful, of the user whose directory it sits in). Anything else is
// refused: a path through a symbolic link, a file, a link, a directory
// that is not empty or belongs to someone else.
//
// A directory inside one of the trees readWrite binds writable is refused
// too, compared by real paths (the opened directory's and each tree's):
// the sandbox could write into it directly during the run, past every
// rule of the copy-out.
func openFindingsDest(p string, readWrite []string) (*findingsDest, error) {
	d := &findingsDest{path: p, dir: -1, parent: -1}
	err := outsideTrees(p, readWrite) // before anything is made
	if err == nil {
		err = d.open()
	}
	if err != nil {
		d.discard()
		return nil, fmt.Errorf("sandbox: findings directory %s: %w", quoteUnsafe(p), err)
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
				"the sandbox could write there directly during the run; give a findings directory outside it", quoteUnsafe(rw))
		}
	}
	return nil
}

func (d *findingsDest) open() error {
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
func (d *findingsDest) accept(parentSt *unix.Stat_t) error {
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
	empty, err := isEmptyDir(d.dir)
	if err != nil {
		return fmt.Errorf("read it: %w", err)
	}
	if !empty {
		return errors.New("it exists and is not empty: airlock writes findings only into a new directory (it makes it) or an empty one, so that nothing already there is overwritten or added to")
	}
	if euid == 0 {
		owner := &st
		if d.created {
			owner = parentSt
		}
		if owner.Uid != 0 || owner.Gid != 0 {
			d.owner = findingsOwner{set: true, uid: int(owner.Uid), gid: int(owner.Gid)}
		}
	}
	return nil
}

// walkParents opens the directory dir ("" for the working directory) one
// component at a time, never following a symbolic link, making missing
// components (0755, given to the owner of the deepest existing one when
// rootful), and returns it (O_PATH) with the stat of that owner.
func walkParents(dir string) (int, *unix.Stat_t, error) {
	start := "."
	if filepath.IsAbs(dir) {
		start = "/"
	}
	cur, err := openNoLinks(unix.AT_FDCWD, start, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, nil, walkErr(err)
	}
	var owner unix.Stat_t
	if err := unix.Fstat(cur, &owner); err != nil {
		unix.Close(cur)
		return -1, nil, err
	}
	for _, comp := range strings.Split(dir, "/") {
		if comp == "" || comp == "." {
			continue
		}
		next, err := openNoLinks(cur, comp, unix.O_PATH|unix.O_DIRECTORY, 0)
		made := false
		if errors.Is(err, unix.ENOENT) && comp != ".." {
			if err = unix.Mkdirat(cur, comp, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				made = err == nil
				next, err = openNoLinks(cur, comp, unix.O_PATH|unix.O_DIRECTORY, 0)
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, nil, walkErr(err)
		}
		cur = next
		if made && os.Geteuid() == 0 {
			err = unix.Fchownat(cur, "", int(owner.Uid), int(owner.Gid), unix.AT_EMPTY_PATH)
		} else if !made {
			err = unix.Fstat(cur, &owner)
		}
		if err != nil {
			unix.Close(cur)
			return -1, nil, err
		}
	}
	return cur, &owner, nil
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

// openNoLinks opens name under dirfd without following any link.
func openNoLinks(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: noLinks})
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
}

// isEmptyDir reports whether the directory fd has no entries.
func isEmptyDir(fd int) (bool, error) {
	_, more, err := readDirNames(fd, 0)
	return !more, err
}

// discard closes the destination; one this run made is removed again if
// it is still empty (the run never started, so it never held findings).
func (d *findingsDest) discard() {
	if d.created && d.parent >= 0 {
		unix.Unlinkat(d.parent, d.base, unix.AT_REMOVEDIR)
	}
	d.close()
}

func (d *findingsDest) close() {
	for _, fd := range []*int{&d.dir, &d.parent} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// copyOut copies the sandbox's /findings (src, a descriptor of that
// tmpfs, read after every process inside is dead) into the findings
// directory: directories and regular files only, limit bytes in all. It
// returns every entry left out, renamed or changed, each with why; the
// error matches ErrFindingsLost when anything was left out or the host
// refused a write.
func (d *findingsDest) copyOut(src int, limit int64) ([]string, error) {
	c, err := d.copyTree(src, limit)
	switch {
	case err != nil:
		return c.report, fmt.Errorf("sandbox: %w: %s: %w", ErrFindingsLost, quoteUnsafe(d.path), err)
	case c.lost > 0:
		return c.report, fmt.Errorf("sandbox: %w: %d left out of the copy to %s (the result's findingsSkipped says which and why)", ErrFindingsLost, c.lost, quoteUnsafe(d.path))
	}
	return c.report, nil
}

// copyTree is copyOut's walk; its error is the host's refusal of a write.
func (d *findingsDest) copyTree(src int, limit int64) (*findingsCopy, error) {
	c := &findingsCopy{left: limit, entries: maxFindingsEntries, owner: d.owner}
	err := c.dir(src, d.dir, "", 0)
	if err == nil {
		err = d.owner.apply(d.dir)
	}
	return c, err
}

// copyTree copies the tree src into dst, a directory it makes, as the
// findings are copied out, and reports what it left out or changed (the
// evidence's copy of the workspace).
func copyTree(src int, dst string, limit int64) ([]string, error) {
	d, err := openFindingsDest(dst, nil)
	if err != nil {
		return nil, err
	}
	defer d.close()
	c, err := d.copyTree(src, limit)
	return c.report, err
}

type findingsCopy struct {
	left    int64
	entries int
	owner   findingsOwner
	report  []string // entries left out or changed, with why
	lost    int      // of which left out
	// overflowed is set once the entries cap has been reported.
	overflowed bool
}

// lose reports rel as not copied out.
func (c *findingsCopy) lose(rel, why string) {
	c.report = append(c.report, quoteUnsafe(rel)+": not copied: "+why)
	c.lost++
}

func (c *findingsCopy) dir(src, dst int, rel string, depth int) error {
	if depth > maxDepth {
		c.lose(rel, fmt.Sprintf("nested deeper than %d directories", maxDepth))
		return nil
	}
	// At most as many names as may still be copied: a /findings of
	// millions of entries costs airlock no more than the cap.
	names, more, err := readDirNames(src, c.entries)
	if err != nil {
		c.lose(displayRel(rel), "its directory could not be read: "+err.Error())
		return nil
	}
	slices.Sort(names)
	bare := slices.Contains(names, "objects") && slices.Contains(names, "refs")
	for _, name := range names {
		if c.entries--; c.entries < 0 {
			c.full(path.Join(rel, name))
			return nil
		}
		rel := path.Join(rel, name)
		if !printable(name) {
			c.lose(rel, "its name has control bytes or is not printable UTF-8")
			continue
		}
		to := name
		if isVCSName(name) || bare && name == "HEAD" {
			to = name + renamedSuffix
			c.report = append(c.report, fmt.Sprintf("%s: copied as %s: under its own name, git or hg would read the directory as a repository and run its hooks and config on the host", rel, to))
		}
		if err := c.entry(src, dst, name, to, rel, depth); err != nil {
			return err
		}
	}
	if more {
		c.full(path.Join(rel, "…"))
	}
	return nil
}

// full reports, once, that /findings held more entries than are copied
// out, from rel on.
func (c *findingsCopy) full(rel string) {
	if c.overflowed {
		return
	}
	c.overflowed, c.entries = true, 0
	c.lose(rel, fmt.Sprintf("/findings holds more than %d entries; this one and the rest were left out", maxFindingsEntries))
}

// entry copies the entry name of src to dst as to; the error is the
// host's refusal of a write.
func (c *findingsCopy) entry(src, dst int, name, to, rel string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		c.lose(rel, "it could not be read: "+err.Error())
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return c.subdir(src, dst, name, to, rel, depth)
	case unix.S_IFREG:
		return c.file(src, dst, name, to, rel)
	case unix.S_IFLNK:
		c.lose(rel, "a symbolic link (links are never copied out)")
	case unix.S_IFCHR, unix.S_IFBLK:
		c.lose(rel, "a device")
	case unix.S_IFIFO:
		c.lose(rel, "a fifo")
	case unix.S_IFSOCK:
		c.lose(rel, "a socket")
	default:
		c.lose(rel, "not a regular file or directory")
	}
	return nil
}

func (c *findingsCopy) subdir(src, dst int, name, to, rel string, depth int) error {
	sfd, err := initproc.OpenBeneath(src, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		c.lose(rel, "it could not be opened: "+err.Error())
		return nil
	}
	defer unix.Close(sfd)
	var sst unix.Stat_t
	if err := unix.Fstat(sfd, &sst); err != nil {
		c.lose(rel, "it could not be read: "+err.Error())
		return nil
	}
	// The sandbox's permission bits, but always usable by the owner, and
	// never setgid or sticky.
	if err := unix.Mkdirat(dst, to, sst.Mode&0o777|0o700); errors.Is(err, unix.EEXIST) {
		c.lose(rel, "the host's findings directory already has an entry of that name, which is never written through")
		return nil
	} else if err != nil {
		return fmt.Errorf("make %s: %w", quoteUnsafe(rel), err)
	}
	dfd, err := initproc.OpenBeneath(dst, to, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(dfd, &st)
	}
	if err != nil || int(st.Uid) != os.Geteuid() {
		if err == nil {
			unix.Close(dfd)
		}
		c.lose(rel, "the directory airlock made for it on the host was replaced while it was copied")
		return nil
	}
	defer unix.Close(dfd)
	if err := c.dir(sfd, dfd, rel, depth+1); err != nil {
		return err
	}
	return c.owner.apply(dfd)
}

func (c *findingsCopy) file(src, dst int, name, to, rel string) error {
	sfd, err := initproc.OpenBeneath(src, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		c.lose(rel, "it could not be opened: "+err.Error())
		return nil
	}
	in := os.NewFile(uintptr(sfd), rel)
	defer in.Close()
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		c.lose(rel, "not a regular file when opened")
		return nil
	}
	if st.Size > c.left {
		c.lose(rel, fmt.Sprintf("over the findings' size cap (%d bytes; %d left of diskWriteMb)", st.Size, c.left))
		return nil
	}
	// A new file, never an existing one or a link's target (O_EXCL), with
	// the read and write bits the sandbox gave it and nothing more.
	mode := st.Mode & 0o7777
	dfd, err := initproc.OpenBeneath(dst, to, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode&0o666)
	if errors.Is(err, unix.EEXIST) {
		c.lose(rel, "the host's findings directory already has an entry of that name, which is never written through")
		return nil
	} else if err != nil {
		return fmt.Errorf("create %s: %w", quoteUnsafe(rel), err)
	}
	out := os.NewFile(uintptr(dfd), rel)
	_, err = io.CopyN(out, in, st.Size)
	if err == nil {
		err = c.owner.apply(dfd)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", quoteUnsafe(rel), err)
	}
	c.left -= st.Size
	if mode&0o7111 != 0 {
		c.report = append(c.report, fmt.Sprintf("%s: copied as data: mode %04o became %04o (findings never carry an exec, setuid, setgid or sticky bit)", quoteUnsafe(rel), mode, mode&0o666))
	}
	return nil
}

// isVCSName reports whether name is one of vcsNames, in any case.
func isVCSName(name string) bool {
	return slices.ContainsFunc(vcsNames, func(v string) bool { return strings.EqualFold(name, v) })
}

// MarkFindings writes a new file name holding body into the findings
// directory dir after a run (the runbook's UNTRUSTED marker), the way
// the copy-out writes: dir is reached without following a link and must
// be a directory of the caller's (rootful: of anyone, whom the file is
// then given to); an entry of that name already there, which the sandbox
// may have left, is moved aside (renamed, never written through).
func MarkFindings(dir, name string, body []byte) error {
	if err := markFindings(dir, name, body); err != nil {
		return fmt.Errorf("sandbox: mark the findings in %s: %w", quoteUnsafe(dir), err)
	}
	return nil
}

func markFindings(dir, name string, body []byte) error {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return fmt.Errorf("bad file name %q", name)
	}
	fd, err := openNoLinks(unix.AT_FDCWD, filepath.Clean(dir), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return walkErr(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	euid := os.Geteuid()
	if euid != 0 && int(st.Uid) != euid {
		return fmt.Errorf("it belongs to uid %d, not to the caller", st.Uid)
	}
	var old unix.Stat_t
	if err := unix.Fstatat(fd, name, &old, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		aside := fmt.Sprintf("%s-from-sandbox-%d", name, old.Ino)
		if err := unix.Renameat2(fd, name, fd, aside, unix.RENAME_NOREPLACE); err != nil {
			return fmt.Errorf("move the sandbox's %s aside: %w", name, err)
		}
	}
	out, err := initproc.OpenBeneath(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(out), name)
	_, err = f.Write(body)
	if err == nil && euid == 0 && (st.Uid != 0 || st.Gid != 0) {
		err = unix.Fchown(out, int(st.Uid), int(st.Gid))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
