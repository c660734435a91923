package privstate

import (
	"errors"
	"os"
	"path/filepath"
)

// Base returns the per-user state directory: $XDG_STATE_HOME when it is
// absolute, else ~/.local/state (a relative XDG_STATE_HOME is ignored, as
// the XDG Base Directory specification says).
func Base() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("no state directory: set $XDG_STATE_HOME or $HOME to an absolute path")
	}
	return filepath.Join(home, ".local", "state"), nil
}
