//go:build !linux && !darwin

package sandbox

import "github.com/airlock-sandbox/airlock/changes"

// Changes fails closed: airlock has no sandbox on this system.
func (ss *Session) Changes(opt changes.Options) (changes.Patch, error) {
	return changes.Patch{}, ErrUnsupported
}
