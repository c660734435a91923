//go:build unix

package macbox

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/airlock-sandbox/airlock/changes"
)

// Changes compares the workspace as it is now with the original kept
// when it was copied in (an empty tree without one) and returns the
// patch and its manifest, under opt, as on Linux (package changes). It
// runs between commands, every process of the last one dead. The
// workspace, which the commands controlled, is read through an os.Root:
// no link leads the reading out of it, and a file is opened without
// waiting (a fifo put in a file's place is not read).
func (b *Box) Changes(opt changes.Options) (changes.Patch, error) {
	old := changes.Empty
	if b.copied && b.cfg.Original {
		old = changes.FSTree(os.DirFS(b.orig))
	}
	return diffDir(old, b.Workspace, opt)
}

// FindingsNow lists what the findings directory holds now, read as
// Changes reads the workspace: a patch against an empty tree.
func (b *Box) FindingsNow(lim changes.Limits) (changes.Patch, error) {
	return diffDir(changes.Empty, b.Findings, changes.Options{Limits: lim})
}

// diffDir compares old with the directory dir, read through its os.Root.
func diffDir(old changes.Tree, dir string, opt changes.Options) (changes.Patch, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return changes.Patch{}, err
	}
	defer root.Close()
	return changes.Diff(old, rootTree{root}, opt)
}

// rootTree is the workspace, read through its os.Root.
type rootTree struct{ r *os.Root }

func (t rootTree) List(lim changes.Limits, prune func(string) bool) ([]changes.Entry, error) {
	return changes.FSTree(t.r.FS()).List(lim, prune)
}

func (t rootTree) Open(p string) (io.ReadCloser, error) {
	f, err := t.r.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("not a regular file when opened")
	}
	return f, nil
}
