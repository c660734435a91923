package sandbox

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/changes"
)

// FindingsNow lists what the session's /findings holds now, between
// steps, as Changes reads /workspace (by its descriptor, no link
// followed, within lim): a patch against an empty tree, whose manifest
// names every entry as added, with its size and SHA-256. The files are
// copied out only when the session ends (docs/sandbox.md, "Findings").
func (ss *Session) FindingsNow(lim changes.Limits) (changes.Patch, error) {
	if ss.frozen.Load() == nil {
		ss.mu.Lock()
		defer ss.mu.Unlock()
	}
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	if ss.sb.finds < 0 {
		return changes.Patch{}, fmt.Errorf("sandbox: findings: %w", ErrSessionEnded)
	}
	p, err := changes.Diff(changes.Empty, workTree{root: ss.sb.finds}, changes.Options{Limits: lim})
	if err != nil {
		return p, fmt.Errorf("sandbox: findings: %w", err)
	}
	return p, nil
}

// copyOut copies /findings out to the findings directory, for Wait and
// Close.
func (s *Sandbox) copyOut() ([]string, error) {
	skipped, err := s.dst.CopyOut(s.finds, s.cfg.Caps.DiskWriteBytes)
	if err != nil {
		err = fmt.Errorf("sandbox: %w", err)
	}
	return skipped, err
}
