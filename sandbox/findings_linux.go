package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// maxFindingsEntries bounds the entries copied out of /findings.
const maxFindingsEntries = 10000

// copyFindings copies the sandbox's /findings (src, a descriptor of that
// tmpfs, read after every process inside is dead) into the host directory
// dst: directories and regular files only, at most limit bytes in all.
// Nothing is followed on either side: a symbolic link, device, fifo or
// socket in /findings is skipped and named in the returned list, and a
// path in dst is resolved beneath dst without following links, so the
// sandbox can neither read nor write outside the two trees. Copied files
// are 0644 (0755 when executable) and directories 0755: no setuid,
// setgid or sticky bit reaches the host.
func copyFindings(src int, dst string, limit int64) ([]string, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("findings: make %s: %w", dst, err)
	}
	dfd, err := unix.Open(dst, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("findings: open %s: %w", dst, err)
	}
	defer unix.Close(dfd)
	c := &findingsCopy{left: limit, entries: maxFindingsEntries}
	err = c.dir(src, dfd, "", 0)
	return c.skipped, err
}

type findingsCopy struct {
	left    int64
	entries int
	skipped []string
}

func (c *findingsCopy) skip(rel, why string) {
	c.skipped = append(c.skipped, rel+": "+why)
}

func (c *findingsCopy) dir(src, dst int, rel string, depth int) error {
	if depth > maxDepth {
		c.skip(rel, "nested too deep")
		return nil
	}
	names, err := readDirNames(src)
	if err != nil {
		return fmt.Errorf("findings: read %s: %w", displayRel(rel), err)
	}
	for _, name := range names {
		if c.entries--; c.entries < 0 {
			c.skip(path.Join(rel, name), "too many entries")
			return nil
		}
		if err := c.entry(src, dst, name, path.Join(rel, name), depth); err != nil {
			return err
		}
	}
	return nil
}

func (c *findingsCopy) entry(src, dst int, name, rel string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("findings: stat %s: %w", rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sfd, err := initproc.OpenBeneath(src, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("findings: open %s: %w", rel, err)
		}
		defer unix.Close(sfd)
		if err := unix.Mkdirat(dst, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("findings: make %s: %w", rel, err)
		}
		dfd, err := initproc.OpenBeneath(dst, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if err != nil {
			c.skip(rel, "the host has something other than a directory there")
			return nil
		}
		defer unix.Close(dfd)
		return c.dir(sfd, dfd, rel, depth+1)
	case unix.S_IFREG:
		return c.file(src, dst, name, rel, st)
	case unix.S_IFLNK:
		c.skip(rel, "symbolic link not copied")
	default:
		c.skip(rel, "not a regular file or directory")
	}
	return nil
}

func (c *findingsCopy) file(src, dstDir int, name, rel string, st unix.Stat_t) error {
	if st.Size > c.left {
		c.skip(rel, "over the findings size cap")
		return nil
	}
	sfd, err := initproc.OpenBeneath(src, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("findings: open %s: %w", rel, err)
	}
	in := os.NewFile(uintptr(sfd), rel)
	defer in.Close()
	mode := uint32(0o644)
	if st.Mode&0o111 != 0 {
		mode = 0o755
	}
	// O_NONBLOCK: a fifo planted at the destination fails instead of
	// blocking; the fstat below refuses anything but a regular file.
	dfd, err := initproc.OpenBeneath(dstDir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, mode)
	if err != nil {
		c.skip(rel, "the host has something other than a regular file there")
		return nil
	}
	out := os.NewFile(uintptr(dfd), rel)
	var dstSt unix.Stat_t
	if err := unix.Fstat(dfd, &dstSt); err != nil || dstSt.Mode&unix.S_IFMT != unix.S_IFREG {
		out.Close()
		c.skip(rel, "the host has something other than a regular file there")
		return nil
	}
	if err := unix.Ftruncate(dfd, 0); err != nil {
		out.Close()
		return fmt.Errorf("findings: truncate %s: %w", rel, err)
	}
	n, err := io.Copy(out, io.LimitReader(in, c.left))
	c.left -= n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("findings: copy %s: %w", rel, err)
	}
	return nil
}
