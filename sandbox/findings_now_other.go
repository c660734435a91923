//go:build !linux && !darwin

package sandbox

import "github.com/airlock-sandbox/airlock/changes"

// FindingsNow fails closed: airlock has no sandbox on this system.
func (ss *Session) FindingsNow(lim changes.Limits) (changes.Patch, error) {
	return changes.Patch{}, ErrUnsupported
}
