package enforcer

import (
	"errors"
	"fmt"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// Changes is what changed in a session's /workspace since it was copied
// in. It is an untrusted artifact, written by whatever ran inside:
// airlock never applies it (docs/sessions.md).
type Changes struct {
	// Patch is a unified diff in git's format, applicable with `git apply`
	// on the original tree.
	Patch []byte `json:"-"`
	// Files lists the changed paths, relative to /workspace, each with how
	// it changed.
	Files []ChangedFile `json:"files"`
	// Incomplete says why Patch does not hold every change (too large),
	// "" when it does.
	Incomplete string `json:"incomplete,omitempty"`
}

// ChangedFile is one path of a Changes manifest.
type ChangedFile struct {
	// Path is relative to /workspace.
	Path string `json:"path"`
	// Change is added, modified, deleted, renamed, mode or type.
	Change string `json:"change"`
}

// ErrNoChanges is returned by Session.Changes when this build cannot
// compute a session's changes.
var ErrNoChanges = errors.New("enforcer: this build of airlock cannot compute a session's workspace changes")

// workspaceChanges computes the changes of a live sandbox session: the
// sandbox session's own diff of its /workspace against what was copied
// in (package changes).
var workspaceChanges = func(ss *sandbox.Session) (Changes, error) {
	return Changes{}, ErrNoChanges
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
	c, err := workspaceChanges(s.ss)
	if err != nil {
		return c, fmt.Errorf("enforcer: session %s: changes: %w", s.id, err)
	}
	return c, nil
}
