//go:build unix

package hostfile

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens the file at path for reading and returns it with what fstat
// says of it. The open does not block: a FIFO or a device named by
// mistake (or by an attacker) would otherwise hang airlock before it
// could say why. Anything but a regular file is refused, named as what it
// is. The returned file is in blocking mode.
func Open(path string) (*os.File, fs.FileInfo, error) {
	fd, err := openNonblock(path)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, nil, notRegular(path, fileType(uint32(st.Mode)))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func openNonblock(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// fileType is the fs.FileMode type bits of a stat(2) mode.
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
