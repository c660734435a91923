//go:build !linux && !darwin

package runbook

import "errors"

// procInfo describes a sandbox process; there are none on this system.
type procInfo struct{}

// sandboxProcs finds a sandbox's processes; on this system there is no
// sandbox, and newSandboxProcs fails closed.
type sandboxProcs struct{}

// escapeChecks is the receipt's "runbook" line: there is no launch here.
const escapeChecks = ""

func newSandboxProcs(int) (*sandboxProcs, error) {
	return nil, errors.New("runbook: no sandbox on this system")
}

func (s *sandboxProcs) afterStep() []string     { return nil }
func (s *sandboxProcs) left() map[int]string    { return nil }
func (s *sandboxProcs) outsideCgroup() []string { return nil }
func (s *sandboxProcs) tree() []procInfo        { return nil }
func hostNetNamespaces() map[string][]int       { return nil }
