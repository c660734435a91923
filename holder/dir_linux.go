package holder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Dir returns the private per-user directory where holders listen:
// $XDG_RUNTIME_DIR/airlock when XDG_RUNTIME_DIR is this user's own
// directory that no one else may enter, else /tmp/airlock-UID. It makes
// the directory (0700) when it is missing, and refuses one that is a
// symbolic link or not a directory, that another user owns, or that
// others may enter.
func Dir() (string, error) {
	uid := os.Geteuid()
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && checkDir(x, uid) == nil {
		return ensureDir(filepath.Join(filepath.Clean(x), "airlock"), uid)
	}
	return ensureDir(filepath.Join("/tmp", "airlock-"+strconv.Itoa(uid)), uid)
}

// ensureDir makes dir (0700) if it is missing and checks it.
func ensureDir(dir string, uid int) (string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("holder: runtime directory: %w", err)
	}
	if err := checkDir(dir, uid); err != nil {
		return "", err
	}
	return dir, nil
}

// checkDir refuses dir unless it is a directory (not a link to one) that
// uid owns and no one else may enter.
func checkDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("holder: runtime directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("holder: runtime directory %s is a symbolic link: refusing it (remove it)", dir)
	case !fi.IsDir():
		return fmt.Errorf("holder: runtime directory %s is not a directory: refusing it (remove it)", dir)
	case !ok || int(st.Uid) != uid:
		return fmt.Errorf("holder: runtime directory %s is owned by another user: refusing it (remove it, or set XDG_RUNTIME_DIR)", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("holder: runtime directory %s may be entered by other users (mode %v): refusing it (chmod 700 it)", dir, fi.Mode().Perm())
	}
	return nil
}
