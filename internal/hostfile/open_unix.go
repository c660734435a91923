//go:build unix

package hostfile

import (
	"errors"
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
func Open(path string) (*os.File, fs.FileInfo, error) { return open(path, 0) }

// OpenNoFollow is Open, but refuses a symbolic link as the last element
// of path: the file opened is the one the directory names.
func OpenNoFollow(path string) (*os.File, fs.FileInfo, error) {
	f, fi, err := open(path, unix.O_NOFOLLOW)
	if errors.Is(err, unix.ELOOP) {
		return nil, nil, fmt.Errorf("%s is a symbolic link, not the file itself", path)
	}
	return f, fi, err
}

func open(path string, flags int) (*os.File, fs.FileInfo, error) {
	fd, err := openFlags(path, unix.O_RDONLY|flags, 0)
	if err != nil {
		return nil, nil, openError(path, err)
	}
	return regular(fd, path)
}

// regular makes fd, opened at path, a file in blocking mode, or closes it
// and refuses it when it is not a regular file.
func regular(fd int, path string) (*os.File, fs.FileInfo, error) {
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path, fi.Mode())
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// WriteFile writes data to the file at path, creating it with perm, as
// os.WriteFile does, but without blocking on a FIFO (with no reader, or
// any other special file) and only into a regular file, which it
// truncates once it knows that is what it is.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Close()
}

// Create opens the file at path for writing, creating it with perm, as
// os.Create does, but without blocking on a FIFO, only when it is a
// regular file (never a terminal or another device: what is written may
// be untrusted bytes), which it truncates once it knows that is what it
// is, and never through a symbolic link as its last element: one left
// where airlock was told to write (a --result in a directory the agent
// can write) would have airlock, root perhaps, overwrite whatever it
// points to. The returned file is in blocking mode.
func Create(path string, perm os.FileMode) (*os.File, error) {
	fd, err := openFlags(path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW, uint32(perm.Perm()))
	if err == unix.ELOOP {
		return nil, fmt.Errorf("%s is a symbolic link: airlock does not write through one; name the file itself", path)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	f, _, err := regular(fd, path)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openError is the error of a failed open: ENXIO, which open(2) gives
// for a socket and, written to, for a FIFO with no reader, is said as
// what the file is.
func openError(path string, err error) error {
	if err == unix.ENXIO {
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return notRegular(path, fi.Mode())
		}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// openFlags opens path with flags, never blocking and never making it
// the controlling terminal.
func openFlags(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
