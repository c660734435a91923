package initproc

import (
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

// openBeneath opens name under dirfd, resolved with the beneath rules.
func OpenBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
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

// extractWorkspace unpacks the parent's workspace stream (stream.go)
// into dir, the fresh /workspace tmpfs. The stream comes from the parent,
// but the names are checked anyway and every path is resolved beneath dir
// without following links, so an entry can never land outside it.
func extractWorkspace(r io.Reader, dir string, limit int64) error {
	root, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	for {
		e, err := ReadEntry(r)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := entryName(e.Name)
		if err != nil {
			return err
		}
		if e.Size < 0 || e.Size > limit {
			return fmt.Errorf("%s: larger than the disk cap", name)
		}
		limit -= e.Size
		if err := extractEntry(root, name, e, r); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// entryName checks an entry's name and returns it without a trailing
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

func extractEntry(root int, name string, e Entry, r io.Reader) error {
	parent, base := path.Split(name)
	pfd := root
	if parent != "" {
		fd, err := OpenBeneath(root, strings.TrimSuffix(parent, "/"), unix.O_DIRECTORY|unix.O_PATH, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	perm := e.Mode & 0o777
	switch e.Type {
	case EntryDir:
		return unix.Mkdirat(pfd, base, perm|0o700)
	case EntrySymlink:
		return unix.Symlinkat(e.Link, pfd, base)
	case EntryFile:
		fd, err := OpenBeneath(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), base)
		_, err = io.CopyN(f, r, e.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	default:
		return fmt.Errorf("unexpected entry type %q", e.Type)
	}
}
