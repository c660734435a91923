//go:build !linux && !darwin

package sandbox

import (
	"context"
	"net"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
)

// Session is one sandbox that runs several commands; on this system
// there are none.
type Session struct{}

// StartSession fails closed: airlock has no sandbox on this system.
func StartSession(ctx context.Context, cfg Config) (*Session, error) { return nil, ErrUnsupported }

// Listener returns nil.
func (ss *Session) Listener() net.Listener { return nil }

// Pid returns 0.
func (ss *Session) Pid() int { return 0 }

// Exec fails closed.
func (ss *Session) Exec(ctx context.Context, st Step) (Result, error) {
	return Result{ExitCode: -1}, ErrUnsupported
}

// Close fails closed.
func (ss *Session) Close() (Teardown, error) { return Teardown{}, ErrUnsupported }

// Freeze fails closed.
func (ss *Session) Freeze() (string, error) { return "", ErrUnsupported }

// Evidence fails closed.
func (ss *Session) Evidence(dir string) (evidence.Record, error) {
	return evidence.Record{Dir: dir}, ErrUnsupported
}

// Probe fails closed.
func (ss *Session) Probe(req ProbeRequest) ([]ProbeResult, error) { return nil, ErrUnsupported }

// Receipt returns nil.
func (ss *Session) Receipt() map[string]string { return nil }

// SetFindings fails closed.
func (ss *Session) SetFindings(dir string) error { return ErrUnsupported }

// CopyIn fails closed.
func (ss *Session) CopyIn(dir string) error { return ErrUnsupported }

// Changes fails closed: airlock has no sandbox on this system.
func (ss *Session) Changes(opt changes.Options) (changes.Patch, error) {
	return changes.Patch{}, ErrUnsupported
}

// FindingsNow fails closed: airlock has no sandbox on this system.
func (ss *Session) FindingsNow(lim changes.Limits) (changes.Patch, error) {
	return changes.Patch{}, ErrUnsupported
}
