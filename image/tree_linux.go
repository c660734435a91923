package image

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// treeEntry is what Reverify compares of one file: type, permission bits,
// owner, size, content digest and link target. Times are left out: they
// carry no behaviour an attacker could use, and the root's own mtime
// differs between two unpacks.
type treeEntry struct {
	path     string
	mode     fs.FileMode
	uid, gid uint32
	size     int64
	sum      string
	link     string
}

// walkTree lists the tree under dir in lexical order. It reads through an
// os.Root, so a symlink swapped in during the walk cannot lead it out.
func walkTree(dir string) ([]treeEntry, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var out []treeEntry
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := root.Lstat(p)
		if err != nil {
			return err
		}
		e := treeEntry{path: p, mode: fi.Mode()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			e.uid, e.gid = st.Uid, st.Gid
		}
		switch {
		case fi.Mode().IsRegular():
			e.size = fi.Size()
			if e.sum, err = fileSum(root, p); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.link, err = root.Readlink(p); err != nil {
				return err
			}
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

func fileSum(root *os.Root, p string) (string, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// compareTrees compares the cached tree with a fresh unpack and names the
// first difference.
func compareTrees(cached, fresh string) error {
	a, err := walkTree(cached)
	if err != nil {
		return fmt.Errorf("walk cache: %w", err)
	}
	b, err := walkTree(fresh)
	if err != nil {
		return fmt.Errorf("walk fresh unpack: %w", err)
	}
	// Both are in lexical order: the first index where they differ names
	// the first difference.
	for i := range max(len(a), len(b)) {
		switch {
		case i == len(b) || i < len(a) && a[i].path < b[i].path:
			return fmt.Errorf("%q is in the cache but not in the image", a[i].path)
		case i == len(a) || a[i].path > b[i].path:
			return fmt.Errorf("%q is in the image but missing from the cache", b[i].path)
		}
		switch x, y := a[i], b[i]; {
		case x.mode != y.mode:
			return fmt.Errorf("%q has mode %v in the cache, %v in the image", x.path, x.mode, y.mode)
		case x.uid != y.uid || x.gid != y.gid:
			return fmt.Errorf("%q is owned by %d:%d in the cache, %d:%d in the image", x.path, x.uid, x.gid, y.uid, y.gid)
		case x.size != y.size || x.sum != y.sum:
			return fmt.Errorf("%q has different content in the cache", x.path)
		case x.link != y.link:
			return fmt.Errorf("%q links to %q in the cache, %q in the image", x.path, x.link, y.link)
		}
	}
	return nil
}
