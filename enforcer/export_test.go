package enforcer

import "github.com/airlock-sandbox/airlock/sandbox"

// SetWorkspaceChanges replaces how a session's changes are computed, for
// a test, and returns what restores it.
func SetWorkspaceChanges(f func(*sandbox.Session, []string) (Changes, error)) (restore func()) {
	old := workspaceChanges
	workspaceChanges = f
	return func() { workspaceChanges = old }
}

// CanaryAddr is the address of a session's canary listener.
func CanaryAddr(s *Session) string { return s.canary.Request().CanaryAddr }
