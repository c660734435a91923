package cmdgate

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// statInRoot stats p as the sandbox will see it with root as its root
// file system (openInRoot).
func statInRoot(root, p string) (os.FileInfo, error) {
	f, err := openInRoot(root, p, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// openInRoot opens p as the sandbox will see it with root as its root
// file system: every symbolic link is resolved inside root
// (RESOLVE_IN_ROOT), never on the host, so an image's absolute links
// cannot point the lookup at the host's files.
func openInRoot(root, p string, flags uint64) (*os.File, error) {
	dir, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	fd, err := unix.Openat2(int(dir.Fd()), strings.TrimPrefix(p, "/"), &unix.OpenHow{
		Flags:   flags | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// openInRootForReading is openInRoot for reading.
func openInRootForReading(root, p string) (*os.File, error) {
	return openInRoot(root, p, unix.O_RDONLY)
}
