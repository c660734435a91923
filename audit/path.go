package audit

import (
	"errors"
	"os"
	"path/filepath"
)

// DefaultPath returns the audit file to use when the command line names
// none: $AIRLOCK_AUDIT, else audit.jsonl in StateDir.
func DefaultPath() (string, error) {
	if p := os.Getenv("AIRLOCK_AUDIT"); p != "" {
		return p, nil
	}
	dir, err := StateDir()
	if err != nil {
		return "", errors.New("audit: no audit file: set --audit, $AIRLOCK_AUDIT, $XDG_STATE_HOME or $HOME")
	}
	return filepath.Join(dir, "audit.jsonl"), nil
}

// StateDir returns airlock's state directory, where the default audit
// log and the evidence of suspected escapes go: $XDG_STATE_HOME/airlock,
// else ~/.local/state/airlock. A relative XDG_STATE_HOME is ignored, as
// the XDG Base Directory specification says.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("audit: no state directory: set $XDG_STATE_HOME or $HOME")
	}
	return filepath.Join(home, ".local", "state", "airlock"), nil
}

// Files returns the host files that belong to the audit log at path, for
// a sandbox to be kept from: the log, the files beside it named after it
// (path.*, as a lock or a saved head would be), and airlock's state
// directory (StateDir), which holds the default log and the evidence of
// earlier runs.
func Files(path string) []string {
	files := []string{path}
	siblings, _ := filepath.Glob(globQuote(path) + ".*")
	files = append(files, siblings...)
	if dir, err := StateDir(); err == nil {
		files = append(files, dir)
	}
	return files
}

// globQuote escapes the metacharacters of filepath.Match in p.
func globQuote(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, p[i])
	}
	return string(out)
}

// PrivatePaths lists what a sandbox must never see of this log beyond the
// file itself: its tree file, its checkpoint, its runs directory, and the
// signing key's directory.
func (l *Log) PrivatePaths() []string {
	p := []string{l.path + sidecarSuffix, l.path + CheckpointSuffix, l.path + RunsSuffix}
	if l.signer != nil && l.signer.dir != "" {
		p = append(p, l.signer.dir)
	}
	var out []string
	for _, x := range p {
		if filepath.IsAbs(x) {
			out = append(out, filepath.Clean(x))
		}
	}
	return out
}
