//go:build unix

package macbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
)

// The findings copy-out, as on Linux (docs/sandbox.md, "Findings"):
// the findings directory is made, or an empty one of the caller's taken,
// when the box starts, with no symbolic link on the way; after every
// process of the command is dead, the box's findings directory is read
// through an os.Root, and only directories and regular files come out,
// each created new in the destination (O_EXCL, through an os.Root of it:
// never through a link or over an existing entry), files as data (their
// read and write bits only). Names that make git or hg read a directory
// as a repository come out renamed.

// MaxFindingsEntries bounds the entries copied out.
const MaxFindingsEntries = 10000

// vcsNames are the entry names copied out renamed (in any case), and
// renamedSuffix what is added to them.
var vcsNames = []string{".git", ".hg"}

const renamedSuffix = "-renamed-by-airlock"

// Dest is the host's findings directory, from the box's start to the
// copy-out.
type Dest struct {
	path    string
	root    *os.Root
	created bool
}

// OpenDest makes the findings directory p (its missing parents too), or
// takes it when it is an empty directory of the caller's, and refuses
// anything else: a symbolic link on the way, a file, a directory with
// entries or of another user, one inside a readWrite tree (the command
// could write there directly).
func OpenDest(p string, readWrite []string) (*Dest, error) {
	d := &Dest{path: p}
	err := outsideTrees(p, readWrite)
	if err == nil {
		err = d.open()
	}
	if err != nil {
		d.Discard()
		return nil, fmt.Errorf("findings directory %s: %w", quoteUnsafe(p), err)
	}
	return d, nil
}

func outsideTrees(p string, readWrite []string) error {
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
		if tree, err := hostfile.Real(rw); err == nil && hostfile.Within(real, tree) {
			return fmt.Errorf("it is inside %s, which the policy's readWrite makes writable to the sandbox: "+
				"the sandbox could write there directly during the run; give a findings directory outside it", quoteUnsafe(rw))
		}
	}
	return nil
}

func (d *Dest) open() error {
	abs, err := filepath.Abs(d.path)
	if err != nil {
		return err
	}
	// Every component, the last included, is a directory and no link.
	for at := "/"; ; {
		fi, err := os.Lstat(at)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return errors.New("a component of the path is a symbolic link: airlock follows none on the way to the findings directory (give the path without links, e.g. from realpath, if you trust them)")
		case !fi.IsDir() && at == abs:
			return errors.New("it exists and is not a directory: give a new path (airlock makes the directory) or an empty directory")
		case !fi.IsDir():
			return errors.New("a component of the path is not a directory")
		}
		if at == abs {
			break
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(abs, at), "/")
		next := filepath.Join(at, strings.SplitN(rel, "/", 2)[0])
		switch err := os.Mkdir(next, 0o755); {
		case err == nil && next == abs:
			d.created = true
		case err != nil && !errors.Is(err, fs.ErrExist):
			return fmt.Errorf("make it: %w", err)
		}
		at = next
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return fmt.Errorf("open it: %w", err)
	}
	d.root = root
	fi, err := root.Stat(".")
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		if d.created {
			return errors.New("it was replaced while airlock made it")
		}
		return fmt.Errorf("it exists and belongs to uid %d: airlock writes findings only into a directory it makes, or an empty one of its caller's", st.Uid)
	}
	f, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("read it: %w", err)
	}
	names, err := f.Readdirnames(1)
	f.Close()
	if len(names) > 0 {
		return errors.New("it exists and is not empty: airlock writes findings only into a new directory (it makes it) or an empty one, so that nothing already there is overwritten or added to")
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read it: %w", err)
	}
	return nil
}

// Discard closes the destination; one made for this box is removed
// again if it is still empty.
func (d *Dest) Discard() {
	if d.created {
		os.Remove(d.path)
	}
	d.Close()
}

// Close closes the destination.
func (d *Dest) Close() {
	if d.root != nil {
		d.root.Close()
		d.root = nil
	}
}

// ErrLost is matched by CopyOut's error when anything was left out or
// the host refused a write.
var ErrLost = errors.New("findings not kept")

// CopyOut copies the directory src (the box's findings, every process
// dead) into d, limit bytes in all, and returns every entry left out,
// renamed or changed, each with why.
func (d *Dest) CopyOut(src string, limit int64) ([]string, error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLost, err)
	}
	defer root.Close()
	c := &findingsCopy{src: root, dst: d.root, left: limit, entries: MaxFindingsEntries}
	err = c.dir(".", ".", 0)
	switch {
	case err != nil:
		return c.report, fmt.Errorf("%w: %s: %w", ErrLost, quoteUnsafe(d.path), err)
	case c.lost > 0:
		return c.report, fmt.Errorf("%w: %d left out of the copy to %s (the result's findingsSkipped says which and why)", ErrLost, c.lost, quoteUnsafe(d.path))
	}
	return c.report, nil
}

type findingsCopy struct {
	src, dst   *os.Root
	left       int64
	entries    int
	report     []string
	lost       int
	overflowed bool
}

func (c *findingsCopy) lose(rel, why string) {
	c.report = append(c.report, quoteUnsafe(rel)+": not copied: "+why)
	c.lost++
}

// dir copies the directory rel of the source into to of the
// destination (its name there, renamed where a name above was).
func (c *findingsCopy) dir(rel, to string, depth int) error {
	if depth > maxDepth {
		c.lose(rel, fmt.Sprintf("nested deeper than %d directories", maxDepth))
		return nil
	}
	f, err := c.src.Open(rel)
	if err != nil {
		c.lose(rel, "its directory could not be read: "+err.Error())
		return nil
	}
	names, err := f.Readdirnames(c.entries + 1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		c.lose(rel, "its directory could not be read: "+err.Error())
		return nil
	}
	slices.Sort(names)
	bare := slices.Contains(names, "objects") && slices.Contains(names, "refs")
	for _, name := range names {
		p := path.Join(rel, name)
		if c.entries--; c.entries < 0 {
			if !c.overflowed {
				c.overflowed = true
				c.lose(p, fmt.Sprintf("/findings holds more than %d entries; this one and the rest were left out", MaxFindingsEntries))
			}
			return nil
		}
		if !printable(name) {
			c.lose(p, "its name has control bytes or is not printable UTF-8")
			continue
		}
		as := name
		if isVCSName(name) || bare && name == "HEAD" {
			as += renamedSuffix
			c.report = append(c.report, fmt.Sprintf("%s: copied as %s: under its own name, git or hg would read the directory as a repository and run its hooks and config on the host", p, as))
		}
		if err := c.entry(p, path.Join(to, as), depth); err != nil {
			return err
		}
	}
	return nil
}

func (c *findingsCopy) entry(rel, to string, depth int) error {
	fi, err := c.src.Lstat(rel)
	if err != nil {
		c.lose(rel, "it could not be read: "+err.Error())
		return nil
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		if err := c.dst.Mkdir(to, m.Perm()|0o700); errors.Is(err, fs.ErrExist) {
			c.lose(rel, "the host's findings directory already has an entry of that name, which is never written through")
			return nil
		} else if err != nil {
			return fmt.Errorf("make %s: %w", quoteUnsafe(rel), err)
		}
		return c.dir(rel, to, depth+1)
	case m.IsRegular():
		return c.file(rel, to)
	case m&fs.ModeSymlink != 0:
		c.lose(rel, "a symbolic link (links are never copied out)")
	case m&fs.ModeDevice != 0:
		c.lose(rel, "a device")
	case m&fs.ModeNamedPipe != 0:
		c.lose(rel, "a fifo")
	case m&fs.ModeSocket != 0:
		c.lose(rel, "a socket")
	default:
		c.lose(rel, "not a regular file or directory")
	}
	return nil
}

func (c *findingsCopy) file(rel, to string) error {
	in, err := c.src.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		c.lose(rel, "it could not be opened: "+err.Error())
		return nil
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		c.lose(rel, "not a regular file when opened")
		return nil
	}
	if fi.Size() > c.left {
		c.lose(rel, fmt.Sprintf("over the findings' size cap (%d bytes; %d left of diskWriteMb)", fi.Size(), c.left))
		return nil
	}
	mode := fi.Mode()
	out, err := c.dst.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm()&0o666)
	if errors.Is(err, fs.ErrExist) {
		c.lose(rel, "the host's findings directory already has an entry of that name, which is never written through")
		return nil
	} else if err != nil {
		return fmt.Errorf("create %s: %w", quoteUnsafe(rel), err)
	}
	_, err = io.CopyN(out, in, fi.Size())
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", quoteUnsafe(rel), err)
	}
	c.left -= fi.Size()
	if bits := uint32(mode.Perm()) | special(mode); bits&0o7111 != 0 {
		c.report = append(c.report, fmt.Sprintf("%s: copied as data: mode %04o became %04o (findings never carry an exec, setuid, setgid or sticky bit)", quoteUnsafe(rel), bits, bits&0o666))
	}
	return nil
}

// special is a mode's setuid, setgid and sticky bits as in stat(2).
func special(m fs.FileMode) uint32 {
	var b uint32
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

func isVCSName(name string) bool {
	return slices.ContainsFunc(vcsNames, func(v string) bool { return strings.EqualFold(name, v) })
}

// printable reports whether s is UTF-8 with only printable characters,
// as package sandbox's.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) })
}

// quoteUnsafe is s as it is when printable, else quoted.
func quoteUnsafe(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// Mark writes a new file name holding body into the findings directory
// dir after a run (the runbook's UNTRUSTED marker): an entry of that
// name already there, which the command may have left, is moved aside
// (renamed, never written through).
func Mark(dir, name string, body []byte) error {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return fmt.Errorf("bad file name %q", name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Lstat(name); err == nil {
		aside := fmt.Sprintf("%s-from-sandbox-%d", name, fi.Sys().(*syscall.Stat_t).Ino)
		if _, err := root.Lstat(aside); err == nil {
			return fmt.Errorf("move the sandbox's %s aside: %s exists", name, aside)
		}
		if err := root.Rename(name, aside); err != nil {
			return fmt.Errorf("move the sandbox's %s aside: %w", name, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
