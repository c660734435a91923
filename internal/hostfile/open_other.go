//go:build !unix

package hostfile

import (
	"errors"
	"io/fs"
	"os"
)

// Open fails closed on systems without a non-blocking open(2): airlock's
// inputs are read on Unix systems only.
func Open(path string) (*os.File, fs.FileInfo, error) {
	return nil, nil, &fs.PathError{Op: "open", Path: path, Err: errors.ErrUnsupported}
}

// OpenNoFollow fails closed, as Open does.
func OpenNoFollow(path string) (*os.File, fs.FileInfo, error) { return Open(path) }

// WriteFile fails closed, as Open does.
func WriteFile(path string, _ []byte, _ os.FileMode) error {
	return &fs.PathError{Op: "open", Path: path, Err: errors.ErrUnsupported}
}

// Create fails closed, as Open does.
func Create(path string, _ os.FileMode) (*os.File, error) {
	return nil, &fs.PathError{Op: "open", Path: path, Err: errors.ErrUnsupported}
}
