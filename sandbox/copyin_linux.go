package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// sendWorkspace writes the host directory root to w as the init's
// workspace stream (initproc.Entry):
// directories, regular files (content, permission bits without setuid,
// setgid or sticky) and symbolic links (as links, never followed). Every
// other kind of entry, and anything behind a mount point, is left out.
// It fails when the files add up to more than limit bytes, or the entries
// to more than entries (the sandbox's disk holds no more: its inode cap).
func sendWorkspace(root string, w io.Writer, limit int64, entries int) error {
	fd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", root, err)
	}
	defer unix.Close(fd)
	t := &workspaceWalk{w: bufio.NewWriterSize(w, 64<<10), left: limit, entries: entries}
	if err := t.dir(fd, "", 0); err != nil {
		return err
	}
	return t.w.Flush()
}

type workspaceWalk struct {
	w       *bufio.Writer
	left    int64
	entries int // how many more entries the sandbox's disk holds
}

func (t *workspaceWalk) dir(fd int, rel string, depth int) error {
	if depth > findings.MaxDepth {
		return fmt.Errorf("workspace: %s: nested deeper than %d", rel, findings.MaxDepth)
	}
	names, more, err := findings.ReadDirNames(fd, t.entries)
	if err != nil {
		return fmt.Errorf("workspace: read %s: %w", displayRel(rel), err)
	}
	for _, name := range names {
		if t.entries--; t.entries < 0 {
			more = true
			break
		}
		if err := t.entry(fd, name, path.Join(rel, name), depth); err != nil {
			return err
		}
	}
	if more {
		return fmt.Errorf("workspace: more entries than the sandbox's disk holds (its inode cap, one per 4 KiB of diskWriteMb; at %s)", displayRel(rel))
	}
	return nil
}

func (t *workspaceWalk) entry(dirfd int, name, rel string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("workspace: stat %s: %w", rel, err)
	}
	mode := st.Mode & 0o777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sub, err := initproc.OpenBeneath(dirfd, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if errors.Is(err, unix.EXDEV) {
			return nil // a mount point inside the workspace: not copied
		}
		if err != nil {
			return fmt.Errorf("workspace: open %s: %w", rel, err)
		}
		defer unix.Close(sub)
		if err := initproc.WriteEntry(t.w, initproc.Entry{Type: initproc.EntryDir, Name: rel, Mode: mode}, nil); err != nil {
			return err
		}
		return t.dir(sub, rel, depth+1)
	case unix.S_IFREG:
		return t.file(dirfd, name, rel, mode)
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, name)
		if err != nil {
			return fmt.Errorf("workspace: readlink %s: %w", rel, err)
		}
		return initproc.WriteEntry(t.w, initproc.Entry{Type: initproc.EntrySymlink, Name: rel, Link: target}, nil)
	default:
		return nil // devices, fifos and sockets are not copied
	}
}

func (t *workspaceWalk) file(dirfd int, name, rel string, mode uint32) error {
	fd, err := initproc.OpenBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.EXDEV) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workspace: open %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("workspace: stat %s: %w", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("workspace: %s changed while being copied", rel)
	}
	if st.Size > t.left {
		return fmt.Errorf("workspace: larger than the disk cap (at %s)", rel)
	}
	t.left -= st.Size
	if err := initproc.WriteEntry(t.w, initproc.Entry{Type: initproc.EntryFile, Name: rel, Mode: mode, Size: st.Size}, f); err != nil {
		return fmt.Errorf("workspace: copy %s: %w", rel, err)
	}
	return nil
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func displayRel(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
