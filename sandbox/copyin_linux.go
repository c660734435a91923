package sandbox

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// beneath is how every path under a copied tree is resolved: never out of
// the tree, never through a symbolic link or a /proc magic link, never
// across a mount point (CVE-2021-30465, CVE-2024-45310 class races).
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// maxDepth bounds the directory nesting that either copy follows.
const maxDepth = 128

// openBeneath opens name under dirfd, resolved with the beneath rules.
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW),
			Mode:    uint64(mode),
			Resolve: beneath,
		})
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
}

// tarWorkspace writes the host directory root to w as a tar stream:
// directories, regular files (content, permission bits without setuid,
// setgid or sticky) and symbolic links (as links, never followed). Every
// other kind of entry, and anything behind a mount point, is left out.
// It fails when the files add up to more than limit bytes.
func tarWorkspace(root string, w io.Writer, limit int64) error {
	fd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", root, err)
	}
	tw := tar.NewWriter(w)
	t := &tarWalk{tw: tw, left: limit}
	err = t.dir(fd, "", 0)
	unix.Close(fd)
	if err != nil {
		return err
	}
	return tw.Close()
}

type tarWalk struct {
	tw   *tar.Writer
	left int64
}

func (t *tarWalk) dir(fd int, rel string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("workspace: %s: nested deeper than %d", rel, maxDepth)
	}
	names, err := readDirNames(fd)
	if err != nil {
		return fmt.Errorf("workspace: read %s: %w", displayRel(rel), err)
	}
	for _, name := range names {
		if err := t.entry(fd, name, path.Join(rel, name), depth); err != nil {
			return err
		}
	}
	return nil
}

func (t *tarWalk) entry(dirfd int, name, rel string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("workspace: stat %s: %w", rel, err)
	}
	mode := int64(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sub, err := openBeneath(dirfd, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if errors.Is(err, unix.EXDEV) {
			return nil // a mount point inside the workspace: not copied
		}
		if err != nil {
			return fmt.Errorf("workspace: open %s: %w", rel, err)
		}
		defer unix.Close(sub)
		if err := t.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: mode}); err != nil {
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
		return t.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: rel, Linkname: target, Mode: 0o777})
	default:
		return nil // devices, fifos and sockets are not copied
	}
}

func (t *tarWalk) file(dirfd int, name, rel string, mode int64) error {
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
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
	if err := t.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: mode, Size: st.Size}); err != nil {
		return err
	}
	n, err := io.Copy(t.tw, io.LimitReader(f, st.Size))
	if err != nil {
		return fmt.Errorf("workspace: copy %s: %w", rel, err)
	}
	if n != st.Size {
		return fmt.Errorf("workspace: %s changed while being copied", rel)
	}
	return nil
}

// extractWorkspace unpacks the parent's tar stream into dir (the fresh
// /workspace tmpfs). The stream comes from tarWorkspace, but the names are
// checked anyway and every path is resolved beneath dir without following
// links, so an entry can never land outside it.
func extractWorkspace(r io.Reader, dir string, limit int64) error {
	root, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if h.Size > limit {
			return fmt.Errorf("%s: larger than the disk cap", name)
		}
		limit -= h.Size
		if err := extractEntry(root, name, h, tr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// entryName checks a tar entry's name and returns it without a trailing
// slash: a clean relative path with no ".." element. Anything else is
// refused (the stream is the parent's own, so a bad name means a bug or a
// tampered stream, never something to repair).
func entryName(raw string) (string, error) {
	name := strings.TrimSuffix(raw, "/")
	if name == "" || name == "." || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("bad entry name %q", raw)
	}
	return name, nil
}

func extractEntry(root int, name string, h *tar.Header, r io.Reader) error {
	parent, base := path.Split(name)
	pfd := root
	if parent != "" {
		fd, err := openBeneath(root, strings.TrimSuffix(parent, "/"), unix.O_DIRECTORY|unix.O_PATH, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	perm := uint32(h.Mode) & 0o777
	switch h.Typeflag {
	case tar.TypeDir:
		return unix.Mkdirat(pfd, base, perm|0o700)
	case tar.TypeSymlink:
		return unix.Symlinkat(h.Linkname, pfd, base)
	case tar.TypeReg:
		fd, err := openBeneath(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), base)
		_, err = io.Copy(f, io.LimitReader(r, h.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	default:
		return fmt.Errorf("unexpected entry type %q", h.Typeflag)
	}
}

// readDirNames lists a directory by descriptor, without "." and "..",
// leaving fd's offset at the end.
func readDirNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), ".")
	defer d.Close()
	return d.Readdirnames(-1)
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
