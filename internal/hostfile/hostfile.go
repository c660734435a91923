// Package hostfile opens the host files airlock reads as input (policies,
// plans, audit logs) and names host files by what they are: Open never
// blocks on a FIFO or a device and refuses anything but a regular file,
// Real resolves every symbolic link of the part of a path that exists,
// and Within compares such real paths.
package hostfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadFile reads at most max+1 bytes of the regular file at path (see
// Open), so that the caller can tell a file over its cap.
func ReadFile(path string, max int64) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// notRegular is the error for a file that Open refuses.
func notRegular(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	case mode&fs.ModeDevice != 0:
		what = "a block device"
	}
	return fmt.Errorf("%s is %s, not a regular file: give the path of a file", path, what)
}

// Real returns the absolute path that p names now, with every symbolic
// link resolved in the part of it that exists; the rest, not created
// yet, follows as written (cleaned).
func Real(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within reports whether the clean absolute path p is dir or lies under it.
func Within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+string(os.PathSeparator))
}
