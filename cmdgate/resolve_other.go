//go:build !linux

package cmdgate

import (
	"errors"
	"os"
)

var errNoRoot = errors.New("resolving a command inside an image root needs Linux")

// statInRoot fails closed: resolving inside an image root needs Linux's
// openat2(RESOLVE_IN_ROOT).
func statInRoot(root, p string) (os.FileInfo, error) { return nil, errNoRoot }

// openInRootForReading fails closed, as statInRoot does.
func openInRootForReading(root, p string) (*os.File, error) { return nil, errNoRoot }
