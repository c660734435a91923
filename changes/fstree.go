package changes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// maxDepth is how deep FSTree goes: a directory below it is skipped.
const maxDepth = 128

// FSTree is a Tree over fsys: a host directory (os.DirFS) or any fs.FS
// whose symbolic links fs.ReadLink can read. It walks with fs.WalkDir,
// which never follows a link, and skips a directory it cannot read or
// nested deeper than 128. It trusts fsys not to change while Diff reads
// it, and reads each directory whole: it is for trees the caller owns
// (a host directory, a test's). The tree that contained code controls is
// read by descriptor instead (sandbox.Session.Changes).
func FSTree(fsys fs.FS) Tree { return fsTree{fsys} }

type fsTree struct{ fsys fs.FS }

func (t fsTree) List(lim Limits, prune func(string) bool) ([]Entry, error) {
	var out []Entry
	count := NewListing(lim)
	at := map[string]int{}
	err := fs.WalkDir(t.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if p == "." {
			return err
		}
		if err != nil {
			// A directory listed, then unreadable: skip what it holds.
			if i, ok := at[p]; ok {
				out[i].Skipped = "could not be read: " + errText(err)
				return nil
			}
			return err
		}
		e, err := t.entry(p, d)
		if err != nil {
			return err
		}
		if err := count.Add(len(e.Path), len(e.Target)); err != nil {
			return err
		}
		at[p] = len(out)
		out = append(out, e)
		if e.Type == Dir && (e.Skipped != "" || prune != nil && prune(p)) {
			return fs.SkipDir
		}
		return nil
	})
	return out, err
}

func (t fsTree) entry(p string, d fs.DirEntry) (Entry, error) {
	info, err := d.Info()
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Path: p, Perm: uint32(info.Mode().Perm())}
	switch m := info.Mode(); {
	case m.IsDir():
		e.Type = Dir
		if strings.Count(p, "/")+1 > maxDepth {
			e.Skipped = fmt.Sprintf("nested deeper than %d directories", maxDepth)
		}
	case m.IsRegular():
		e.Type, e.Size = File, info.Size()
	case m&fs.ModeSymlink != 0:
		e.Type = Symlink
		if e.Target, err = fs.ReadLink(t.fsys, p); err != nil {
			return Entry{}, err
		}
	default:
		e.Skipped = otherReason(m)
	}
	return e, nil
}

// otherReason names what an entry that is not a file, directory or link
// is.
func otherReason(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a fifo, which a patch cannot carry"
	case m&fs.ModeSocket != 0:
		return "a socket, which a patch cannot carry"
	case m&fs.ModeDevice != 0:
		return "a device, which a patch cannot carry"
	}
	return "not a regular file, directory or symbolic link"
}

func (t fsTree) Open(p string) (io.ReadCloser, error) {
	f, err := t.fsys.Open(p)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("not a regular file any more")
	}
	return f, nil
}
