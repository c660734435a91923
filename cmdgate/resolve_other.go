//go:build !linux

package cmdgate

import (
	"errors"
	"os"
)

// statInRoot fails closed: resolving inside an image root needs Linux's
// openat2(RESOLVE_IN_ROOT).
func statInRoot(root, p string) (os.FileInfo, error) {
	return nil, errors.New("resolving a command inside an image root needs Linux")
}
