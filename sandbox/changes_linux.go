package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// changes diffs the original kept in a private file with /workspace,
// read by its descriptor (Changes).
func (ss *Session) changes(opt changes.Options) (changes.Patch, error) {
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	s := ss.sb
	if s.work < 0 {
		return changes.Patch{}, ErrSessionEnded
	}
	old := changes.Empty
	if s.orig != nil {
		old = &streamTree{f: s.orig}
	}
	return changes.Diff(old, workTree{root: s.work}, opt)
}

// openOriginal makes the private file that keeps a session's workspace
// stream: O_TMPFILE (no name at all, gone when closed or when the process
// dies), else a temporary file unlinked at once; mode 0600 either way.
func openOriginal() (*os.File, error) {
	dir := os.TempDir()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), "airlock-workspace-original"), nil
	}
	f, err := os.CreateTemp(dir, "airlock-workspace-*")
	if err != nil {
		return nil, fmt.Errorf("sandbox: a file to keep the workspace's original in: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: a file to keep the workspace's original in: %w", err)
	}
	return f, nil
}

// workspaceWriter is where the workspace stream is written: the init's
// setup pipe and, for a session, the file that keeps the original.
func (s *Sandbox) workspaceWriter(w io.Writer) io.Writer {
	if s.orig == nil {
		return w
	}
	return io.MultiWriter(w, originalWriter{s.orig})
}

// originalWriter names the original's file in a failed write.
type originalWriter struct{ f *os.File }

func (o originalWriter) Write(b []byte) (int, error) {
	n, err := o.f.Write(b)
	if err != nil {
		err = fmt.Errorf("keep the original for Changes: %w", err)
	}
	return n, err
}

// streamTree is the original: the kept workspace stream (initproc's
// format), each file's content read in place.
type streamTree struct {
	f     *os.File
	files map[string]*io.SectionReader
}

func (t *streamTree) List(lim changes.Limits, prune func(string) bool) ([]changes.Entry, error) {
	st, err := t.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("the kept original: %w", err)
	}
	size := st.Size()
	var out []changes.Entry
	count := changes.NewListing(lim)
	t.files = map[string]*io.SectionReader{}
	pruned := map[string]bool{}
	for off := int64(0); off < size; {
		r := &countingReader{r: io.NewSectionReader(t.f, off, size-off)}
		e, err := initproc.ReadEntry(r)
		if err != nil {
			return nil, fmt.Errorf("the kept original at byte %d: %w", off, err)
		}
		off += r.n
		if beneath(pruned, e.Name) {
			if e.Type == initproc.EntryFile && e.Size > 0 {
				off += e.Size
			}
			continue
		}
		if err := count.Add(len(e.Name), len(e.Link)); err != nil {
			return nil, err
		}
		ce := changes.Entry{Path: e.Name, Perm: e.Mode}
		switch e.Type {
		case initproc.EntryDir:
			ce.Type = changes.Dir
			if prune != nil && prune(e.Name) {
				pruned[e.Name] = true
			}
		case initproc.EntrySymlink:
			ce.Type, ce.Target = changes.Symlink, e.Link
		case initproc.EntryFile:
			if e.Size < 0 || e.Size > size-off {
				return nil, fmt.Errorf("the kept original at byte %d: %s is cut short", off, changes.QuotePath(e.Name))
			}
			ce.Type, ce.Size = changes.File, e.Size
			t.files[e.Name] = io.NewSectionReader(t.f, off, e.Size)
			off += e.Size
		default:
			return nil, fmt.Errorf("the kept original at byte %d: entry type %q", off, e.Type)
		}
		out = append(out, ce)
	}
	return out, nil
}

// beneath reports whether a directory above p is in dirs.
func beneath(dirs map[string]bool, p string) bool {
	for q := path.Dir(p); len(dirs) > 0 && q != "."; q = path.Dir(q) {
		if dirs[q] {
			return true
		}
	}
	return false
}

func (t *streamTree) Open(p string) (io.ReadCloser, error) {
	r, ok := t.files[p]
	if !ok {
		return nil, os.ErrNotExist
	}
	return io.NopCloser(io.NewSectionReader(r, 0, r.Size())), nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// workTree is the current /workspace, read from the host by descriptor:
// directories listed a batch at a time, every entry stat'ed without
// following it, every open resolved beneath the root with no link, magic
// link or mount crossed (initproc.OpenBeneath), regular files opened
// O_NONBLOCK and checked to be regular files, at most findings.MaxDepth deep,
// a directory that prune excludes never opened.
type workTree struct{ root int }

func (t workTree) List(lim changes.Limits, prune func(string) bool) ([]changes.Entry, error) {
	w := &workWalk{count: changes.NewListing(lim), prune: prune}
	if err := w.dir(t.root, "", 0); err != nil {
		return nil, err
	}
	return w.out, nil
}

func (t workTree) Open(p string) (io.ReadCloser, error) {
	fd, err := initproc.OpenBeneath(t.root, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, errors.New("not a regular file any more")
	}
	return os.NewFile(uintptr(fd), p), nil
}

type workWalk struct {
	out   []changes.Entry
	count *changes.Listing
	prune func(string) bool
}

// dir lists the directory fd (at rel) a batch of names at a time, so
// that a directory of millions of entries costs no more than the limits.
func (w *workWalk) dir(fd int, rel string, depth int) error {
	dup, err := unix.Openat(fd, ".", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", changes.QuotePath(displayRel(rel)), err)
	}
	d := os.NewFile(uintptr(dup), ".")
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			if err := w.entry(fd, name, path.Join(rel, name), depth); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", changes.QuotePath(displayRel(rel)), err)
		}
	}
}

func (w *workWalk) entry(dirfd int, name, rel string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s: %w", changes.QuotePath(rel), err)
	}
	e := changes.Entry{Path: rel, Perm: st.Mode & 0o777}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Type = changes.Dir
		if depth+1 > findings.MaxDepth {
			e.Skipped = fmt.Sprintf("nested deeper than %d directories", findings.MaxDepth)
			break
		}
		if w.prune != nil && w.prune(rel) {
			break // listed alone: what it holds is left out by rule
		}
		sub, err := initproc.OpenBeneath(dirfd, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if err != nil {
			e.Skipped = "could not be opened: " + err.Error()
			break
		}
		defer unix.Close(sub)
		if err := w.keep(e); err != nil {
			return err
		}
		return w.dir(sub, rel, depth+1)
	case unix.S_IFREG:
		e.Type, e.Size = changes.File, st.Size
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, name)
		if err != nil {
			return fmt.Errorf("readlink %s: %w", changes.QuotePath(rel), err)
		}
		e.Type, e.Target = changes.Symlink, target
	case unix.S_IFIFO:
		e.Skipped = "a fifo, which a patch cannot carry (never opened)"
	case unix.S_IFSOCK:
		e.Skipped = "a socket, which a patch cannot carry"
	case unix.S_IFCHR, unix.S_IFBLK:
		e.Skipped = "a device, which a patch cannot carry (never opened)"
	default:
		e.Skipped = "not a regular file, directory or symbolic link"
	}
	return w.keep(e)
}

// keep adds e to the listing, within the limits.
func (w *workWalk) keep(e changes.Entry) error {
	if err := w.count.Add(len(e.Path), len(e.Target)); err != nil {
		return err
	}
	w.out = append(w.out, e)
	return nil
}
