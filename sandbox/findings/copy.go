//go:build unix

package findings

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxEntries bounds the entries copied out of /findings.
const MaxEntries = 10000

// MaxDepth bounds the directory nesting a copy or a walk follows.
const MaxDepth = 128

// ErrLost is matched (errors.Is) by the error of CopyOut, and so of the
// sandbox's Wait and Session.Close, when /findings was not copied out
// whole: an entry was left out (the result's FindingsSkipped says which
// and why) or the host refused a write. airlock exits with its own status
// then (docs/cli.md).
var ErrLost = errors.New("findings not kept")

// vcsNames are entry names copied out under another name (renamedSuffix
// added), in any case: an entry of that name makes git (or hg) read the
// directory as a repository, whose config and hooks run commands on the
// host when someone (or a shell prompt) runs the tool there. So is the
// HEAD of a directory that also holds objects and refs, the shape of a
// bare git repository.
var vcsNames = []string{".git", ".hg"}

// renamedSuffix is added to the name of an entry copied out renamed.
const renamedSuffix = "-renamed-by-airlock"

// CopyOut copies the sandbox's /findings (src, a descriptor of that
// directory, read after every process inside is dead) into the findings
// directory: directories and regular files only, limit bytes in all. It
// returns every entry left out, renamed or changed, each with why; the
// error matches ErrLost when anything was left out or the host refused a
// write.
func (d *Dest) CopyOut(src int, limit int64) ([]string, error) {
	c, err := d.copyTree(src, limit)
	switch {
	case err != nil:
		return c.report, fmt.Errorf("%w: %s: %w", ErrLost, Quote(d.path), err)
	case c.lost > 0:
		return c.report, fmt.Errorf("%w: %d left out of the copy to %s (the result's findingsSkipped says which and why)", ErrLost, c.lost, Quote(d.path))
	}
	return c.report, nil
}

// copyTree is CopyOut's walk; its error is the host's refusal of a write.
func (d *Dest) copyTree(src int, limit int64) (*copier, error) {
	c := &copier{left: limit, entries: MaxEntries, owner: d.owner}
	err := c.dir(src, d.dir, "", 0)
	if err == nil {
		err = d.owner.apply(d.dir)
	}
	return c, err
}

// CopyTree copies the tree src into dst, a directory it makes, as the
// findings are copied out, and reports what it left out or changed (the
// evidence's copy of the workspace); its error is the host's refusal.
func CopyTree(src int, dst string, limit int64) ([]string, error) {
	d, err := OpenDest(dst, nil)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	c, err := d.copyTree(src, limit)
	return c.report, err
}

type copier struct {
	left    int64
	entries int
	owner   owner
	report  []string // entries left out or changed, with why
	lost    int      // of which left out
	// overflowed is set once the entries cap has been reported.
	overflowed bool
}

// lose reports rel as not copied out.
func (c *copier) lose(rel, why string) {
	c.report = append(c.report, Quote(rel)+": not copied: "+why)
	c.lost++
}

func (c *copier) dir(src, dst int, rel string, depth int) error {
	if depth > MaxDepth {
		c.lose(rel, fmt.Sprintf("nested deeper than %d directories", MaxDepth))
		return nil
	}
	// At most as many names as may still be copied: a /findings of
	// millions of entries costs airlock no more than the cap.
	names, more, err := ReadDirNames(src, c.entries)
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
func (c *copier) full(rel string) {
	if c.overflowed {
		return
	}
	c.overflowed, c.entries = true, 0
	c.lose(rel, fmt.Sprintf("/findings holds more than %d entries; this one and the rest were left out", MaxEntries))
}

// entry copies the entry name of src to dst as to; the error is the
// host's refusal of a write.
func (c *copier) entry(src, dst int, name, to, rel string, depth int) error {
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

func (c *copier) subdir(src, dst int, name, to, rel string, depth int) error {
	sfd, err := openBeneath(src, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
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
	if err := unix.Mkdirat(dst, to, uint32(sst.Mode)&0o777|0o700); errors.Is(err, unix.EEXIST) {
		c.lose(rel, "the host's findings directory already has an entry of that name, which is never written through")
		return nil
	} else if err != nil {
		return fmt.Errorf("make %s: %w", Quote(rel), err)
	}
	dfd, err := openBeneath(dst, to, unix.O_DIRECTORY|unix.O_RDONLY, 0)
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

func (c *copier) file(src, dst int, name, to, rel string) error {
	sfd, err := openBeneath(src, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
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
	mode := uint32(st.Mode) & 0o7777
	dfd, err := openBeneath(dst, to, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode&0o666)
	if errors.Is(err, unix.EEXIST) {
		c.lose(rel, "the host's findings directory already has an entry of that name, which is never written through")
		return nil
	} else if err != nil {
		return fmt.Errorf("create %s: %w", Quote(rel), err)
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
		return fmt.Errorf("copy %s: %w", Quote(rel), err)
	}
	c.left -= st.Size
	if mode&0o7111 != 0 {
		c.report = append(c.report, fmt.Sprintf("%s: copied as data: mode %04o became %04o (findings never carry an exec, setuid, setgid or sticky bit)", Quote(rel), mode, mode&0o666))
	}
	return nil
}

// isVCSName reports whether name is one of vcsNames, in any case.
func isVCSName(name string) bool {
	return slices.ContainsFunc(vcsNames, func(v string) bool { return strings.EqualFold(name, v) })
}

// ReadDirNames lists at most limit names of the directory fd, without
// "." and "..", a batch at a time (fd's own offset untouched): a
// directory of millions of entries costs no more than limit names. more
// reports that the directory holds more than that.
func ReadDirNames(fd, limit int) (names []string, more bool, err error) {
	dup, err := unix.Openat(fd, ".", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, err
	}
	d := os.NewFile(uintptr(dup), ".")
	defer d.Close()
	limit = max(limit, 0)
	for {
		batch, err := d.Readdirnames(min(256, limit+1-len(names)))
		names = append(names, batch...)
		switch {
		case len(names) > limit:
			return names[:limit], true, nil
		case err == io.EOF:
			return names, false, nil
		case err != nil:
			return names, false, err
		}
	}
}

// displayRel is rel as a report names it: "." for the top.
func displayRel(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
