//go:build linux || darwin

package holder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/holder/rundir"
)

// Dir returns the private per-user directory where holders listen
// (rundir.Path): $XDG_RUNTIME_DIR/airlock when XDG_RUNTIME_DIR is this
// user's own directory that no one else may enter, else /tmp/airlock-UID,
// or the user's own $XDG_STATE_HOME/airlock/run when another user made
// that first (and ever after). It makes the directory (0700) when it is
// missing, and refuses one that is a symbolic link or not a directory,
// that another user owns or that others may enter, saying how to fix it.
func Dir() (string, error) {
	uid := os.Geteuid()
	dir := rundir.Path(uid)
	d, err := ensureDir(dir, uid)
	if why := rundir.Taken(uid); err != nil && dir == rundir.Own() && why != "" {
		err = fmt.Errorf("%w; it stands in for %s, which %s", err, rundir.Tmp(uid), why)
	}
	return d, err
}

// ensureDir makes dir (0700, its parents too) if it is missing and checks
// it.
func ensureDir(dir string, uid int) (string, error) {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(dir), 0o700); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("holder: runtime directory %s: %w", dir, err)
	}
	if err := checkDir(dir, uid); err != nil {
		return "", err
	}
	return dir, nil
}

// checkDir refuses dir unless it is a directory (not a link to one) that
// uid owns and no one else may enter.
func checkDir(dir string, uid int) error {
	if _, err := os.Lstat(dir); err != nil {
		return fmt.Errorf("holder: runtime directory: %w", err)
	}
	if why := rundir.Why(dir, uid); why != "" {
		return fmt.Errorf("holder: runtime directory %s %s", dir, why)
	}
	return nil
}
