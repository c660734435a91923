package enforcer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

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

// Freezable is a sandbox the suspected-escape procedure can hold:
// *Sandbox, or the sandbox of a Session.
type Freezable interface {
	Freeze() (string, error)
	Evidence(dir string) (Evidence, error)
}

// Suspicion is what the suspected-escape procedure (Suspect) takes from
// its caller: a session stopped by its alerts, a plan's launch.
type Suspicion struct {
	// Under is where the evidence directory is made, "" for
	// DefaultEvidenceDir; Name names it, with a random suffix when Unique
	// (else it must not exist yet: evidence never mixes with another's).
	Under, Name string
	Unique      bool
	// Record writes escape_suspected: freeze says how the sandbox was
	// frozen ("not frozen: why"), evidence where its evidence is kept
	// ("none: why" when nowhere).
	Record func(freeze, evidence string)
	// Collect writes the caller's own files into the evidence (its
	// summary.json among them), after the sandbox's own snapshot.
	Collect func(*EvidenceFiles)
}

// EvidenceFiles is a suspected escape's evidence directory as it is
// written: what each file could not hold is noted in Problems.
type EvidenceFiles struct {
	// Dir is the directory; Freeze how the sandbox was frozen; Sandbox
	// its own snapshot, in Dir/sandbox.
	Dir, Freeze string
	Sandbox     Evidence
	// Problems are what could not be collected.
	Problems []string
}

// Note adds err, when set, to the problems.
func (f *EvidenceFiles) Note(err error) {
	if err != nil {
		f.Problems = append(f.Problems, err.Error())
	}
}

// JSON writes v, indented, as the file name.
func (f *EvidenceFiles) JSON(name string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		f.Note(fmt.Errorf("evidence: %s: %w", name, err))
		return
	}
	f.Copy(name, bytes.NewReader(append(b, '\n')))
}

// Copy writes r as the file name, created anew (never through a link).
func (f *EvidenceFiles) Copy(name string, r io.Reader) {
	dst := filepath.Join(f.Dir, name)
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		f.Note(fmt.Errorf("evidence: %w", err))
		return
	}
	_, err = io.Copy(w, r)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.Note(fmt.Errorf("evidence: write %s: %w", dst, err))
	}
}

// Suspect is the suspected-escape procedure, the same for every sandbox:
// freeze it where it stands, make the evidence directory (private, of
// its own), record escape_suspected, then keep the evidence: the
// sandbox's own snapshot (processes, mounts, network, the workspace
// kept) and the caller's files. It returns the directory, "" with why
// when none could be made. Ending the sandbox, which kills what it
// froze, and marking its findings (MarkUntrusted) are the caller's next
// steps.
func Suspect(sb Freezable, s Suspicion) (string, error) {
	freeze, err := sb.Freeze()
	if err != nil {
		freeze = "not frozen: " + err.Error()
	}
	dir, err := s.makeDir()
	if err != nil {
		s.Record(freeze, "none: "+err.Error())
		return "", err
	}
	s.Record(freeze, dir)
	f := &EvidenceFiles{Dir: dir, Freeze: freeze}
	f.Sandbox, err = sb.Evidence(filepath.Join(dir, "sandbox"))
	f.Note(err)
	s.Collect(f)
	return dir, nil
}

// makeDir makes the evidence directory.
func (s Suspicion) makeDir() (string, error) {
	base := s.Under
	if base == "" {
		d, err := DefaultEvidenceDir()
		if err != nil {
			return "", fmt.Errorf("enforcer: %w", err)
		}
		base = d
	}
	base, err := filepath.Abs(base)
	if err == nil {
		err = os.MkdirAll(base, 0o700)
	}
	if err != nil {
		return "", fmt.Errorf("evidence: %w", err)
	}
	dir := filepath.Join(base, s.Name)
	if s.Unique {
		dir, err = os.MkdirTemp(base, s.Name+"-")
	} else {
		err = os.Mkdir(dir, 0o700)
	}
	if err != nil {
		return "", fmt.Errorf("evidence: %w", err)
	}
	return dir, nil
}
