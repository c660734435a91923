package enforcer

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// Changes is what changed in a session's /workspace since it was copied
// in. It is an untrusted artifact, written by whatever ran inside:
// airlock never applies it (docs/changes.md).
type Changes struct {
	// Patch is a unified diff in git's format, applicable with `git apply`
	// on the original tree.
	Patch []byte `json:"-"`
	// Files lists every changed path, relative to /workspace, with how it
	// changed; one the patch does not carry says why (Omitted).
	Files []changes.FileChange `json:"files"`
	// Incomplete says why Patch does not hold every change (a limit, or a
	// path git could not take), "" when it does.
	Incomplete string `json:"incomplete,omitempty"`
	// Omissions counts the changes Patch leaves out, by class: one line
	// each on a command's stderr.
	Omissions []changes.Omission `json:"omissions,omitempty"`
	// Excluded counts what the policy's changes.exclude and the
	// workspace's original .gitignore files left out.
	Excluded []changes.Exclusion `json:"excluded,omitempty"`
}

// workspaceChanges computes the changes of a live sandbox session: the
// sandbox session's own diff of its /workspace against what was copied
// in, within the changes package's default limits, leaving out what the
// patterns exclude (and the original's ignore files).
var workspaceChanges = func(ss *sandbox.Session, exclude []string) (Changes, error) {
	p, err := ss.Changes(changes.Options{Exclude: exclude})
	if err != nil {
		return Changes{}, err
	}
	c := Changes{Patch: p.Diff, Files: p.Files, Omissions: p.Omissions, Excluded: p.Excluded}
	if c.Files == nil {
		c.Files = []changes.FileChange{}
	}
	if err := p.Incomplete(); err != nil {
		c.Incomplete = err.Error()
	}
	return c, nil
}

// Changes returns what changed in /workspace since the session started,
// between steps (it waits for a step in flight). It fails with
// ErrSessionEnded once the session has ended.
func (s *Session) Changes() (Changes, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if why := s.ending.Load(); why != nil {
		return Changes{}, fmt.Errorf("%w (%s)", ErrSessionEnded, *why)
	}
	c, err := workspaceChanges(s.sb.ss, s.e.pol.ChangesExclude())
	if err != nil {
		return c, fmt.Errorf("enforcer: session %s: changes: %w", s.id, err)
	}
	return c, nil
}
