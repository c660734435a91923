package sandbox

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/changes"
)

// findingsNow diffs an empty tree with /findings, read by its
// descriptor (FindingsNow).
func (ss *Session) findingsNow(lim changes.Limits) (changes.Patch, error) {
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	if ss.sb.finds < 0 {
		return changes.Patch{}, ErrSessionEnded
	}
	return changes.Diff(changes.Empty, workTree{root: ss.sb.finds}, changes.Options{Limits: lim})
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
