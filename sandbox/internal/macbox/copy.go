//go:build unix

package macbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// budget is what the copies may still take.
type budget struct {
	bytes   int64
	entries int
}

// copyTree copies the host directory src into dst, a directory it makes,
// as the Linux sandbox streams a workspace in: directories, regular files
// (their permission bits without setuid, setgid or sticky) and symbolic
// links (as links, never followed); every other kind of entry, and
// anything on another file system (a mount point inside), is left out.
// src is read through an os.Root, so that nothing outside it is reached
// whatever its entries become meanwhile. It fails past the budget.
func copyTree(src, dst string, b *budget) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	st, err := root.Stat(".")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	c := &copier{root: root, dst: dst, dev: device(st), b: b}
	return c.dir(".", 0)
}

type copier struct {
	root *os.Root
	dst  string
	dev  uint64
	b    *budget
}

func (c *copier) dir(rel string, depth int) error {
	if depth > findings.MaxDepth {
		return fmt.Errorf("workspace: %s: nested deeper than %d", rel, findings.MaxDepth)
	}
	f, err := c.root.Open(rel)
	if err != nil {
		return fmt.Errorf("workspace: open %s: %w", rel, err)
	}
	ents, err := f.ReadDir(c.b.entries + 1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("workspace: read %s: %w", rel, err)
	}
	for _, e := range ents {
		if c.b.entries--; c.b.entries < 0 {
			return fmt.Errorf("workspace: more entries than the sandbox's disk holds (one per 4 KiB of diskWriteMb; at %s)", rel)
		}
		if err := c.entry(path.Join(rel, e.Name()), depth); err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) entry(rel string, depth int) error {
	fi, err := c.root.Lstat(rel)
	if err != nil {
		return fmt.Errorf("workspace: stat %s: %w", rel, err)
	}
	to := path.Join(c.dst, rel)
	perm := fi.Mode().Perm()
	switch {
	case fi.IsDir():
		if device(fi) != c.dev {
			return nil // a mount point inside the workspace: not copied
		}
		if err := os.Mkdir(to, perm|0o700); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if err := c.dir(rel, depth+1); err != nil {
			return err
		}
		return os.Chmod(to, perm|0o700)
	case fi.Mode().IsRegular():
		return c.file(rel, to, perm)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := c.root.Readlink(rel)
		if err != nil {
			return fmt.Errorf("workspace: read link %s: %w", rel, err)
		}
		return os.Symlink(target, to)
	}
	return nil
}

func (c *copier) file(rel, to string, perm fs.FileMode) error {
	in, err := c.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("workspace: open %s: %w", rel, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("workspace: %s: not a regular file when opened", rel)
	}
	if c.b.bytes -= fi.Size(); c.b.bytes < 0 {
		return fmt.Errorf("workspace: larger than the sandbox's disk (diskWriteMb; at %s)", rel)
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	_, err = io.CopyN(out, in, fi.Size())
	if err == nil {
		err = out.Chmod(perm) // the bits the umask took
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("workspace: copy %s: %w", rel, err)
	}
	return nil
}

// device is the file system a file is on.
func device(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}
