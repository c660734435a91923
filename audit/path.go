package audit

import (
	"errors"
	"os"
	"path/filepath"
)

// DefaultPath returns the audit file to use when the command line names
// none: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl, else
// ~/.local/state/airlock/audit.jsonl. A relative XDG_STATE_HOME is ignored,
// as the XDG Base Directory specification says.
func DefaultPath() (string, error) {
	if p := os.Getenv("AIRLOCK_AUDIT"); p != "" {
		return p, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock", "audit.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("audit: no audit file: set --audit, $AIRLOCK_AUDIT, $XDG_STATE_HOME or $HOME")
	}
	return filepath.Join(home, ".local", "state", "airlock", "audit.jsonl"), nil
}
