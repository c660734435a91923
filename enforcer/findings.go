package enforcer

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/changes"
)

// Findings is what a live session's /findings holds, before it is copied
// out at the session's end.
type Findings struct {
	// Files lists every entry, relative to /findings, as added (kind
	// "added"), with its mode, size and SHA-256.
	Files []changes.FileChange `json:"files"`
	// Incomplete says why Files does not list every entry (a limit), ""
	// when it does.
	Incomplete string `json:"incomplete,omitempty"`
}

// Findings lists what /findings holds now, between steps (it waits for
// a step in flight). It fails with ErrSessionEnded once the session has
// ended.
func (s *Session) Findings() (Findings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if why := s.ending.Load(); why != nil {
		return Findings{}, fmt.Errorf("%w (%s)", ErrSessionEnded, *why)
	}
	p, err := s.sb.ss.FindingsNow(changes.Limits{})
	if err != nil {
		return Findings{}, fmt.Errorf("enforcer: session %s: findings: %w", s.id, err)
	}
	f := Findings{Files: p.Files}
	if f.Files == nil {
		f.Files = []changes.FileChange{}
	}
	if err := p.Incomplete(); err != nil {
		f.Incomplete = err.Error()
	}
	return f, nil
}
