package enforcer

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// UntrustedMarker is the file written into the host findings directory
// of a sandbox in which an escape was suspected (a session's, a plan's):
// whatever the sandbox produced may have been shaped by whoever escaped.
const UntrustedMarker = "UNTRUSTED"

// MarkUntrusted writes UntrustedMarker into the host findings directory
// dir, saying that everything in it came out of a sandbox that, why, and
// where the evidence is ("" for none), moving aside anything of that name
// the findings brought (findings.Mark: no link followed, nothing
// written through).
func MarkUntrusted(dir, that, why, evidence string) error {
	body := "UNTRUSTED: everything in this directory came out of a sandbox " + that + ".\n" + why + "\n"
	if evidence != "" {
		body += "evidence: " + evidence + "\n"
	}
	return findings.Mark(dir, UntrustedMarker, []byte(body))
}

// DefaultEvidenceDir returns $XDG_STATE_HOME/airlock/evidence, else
// ~/.local/state/airlock/evidence: beside the default audit log, private
// to the user. A suspected escape's evidence goes there, in a directory
// of its own.
func DefaultEvidenceDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock", "evidence"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("no evidence directory: set $XDG_STATE_HOME or $HOME")
	}
	return filepath.Join(home, ".local", "state", "airlock", "evidence"), nil
}
