package sandbox

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// DefaultStopGrace is how long a terminated run or step has between its
// signal and the SIGKILL of everything in the sandbox, when the caller
// names no other: podman's and docker's default stop timeout.
const DefaultStopGrace = 10 * time.Second

// Terminated is a context cause (context.WithCancelCause) that asks for a
// graceful end instead of an immediate kill: the target of a run, or the
// step of a session, is sent Signal (the init forwards it, as to any
// signal it receives), and everything in the sandbox is killed Grace
// later unless it has ended by then. A context cancelled with any other
// cause ends the run or the step at once (docs/cli.md, "Exit codes").
type Terminated struct {
	Signal syscall.Signal
	Grace  time.Duration
}

// Error says which signal and grace period the caller asked for.
func (t *Terminated) Error() string {
	return fmt.Sprintf("terminated by signal %d (%v), grace period %v", int(t.Signal), t.Signal, t.Grace)
}

// TerminationOf returns the Terminated cause of a cancelled ctx, or nil
// when ctx was cancelled otherwise (or not at all).
func TerminationOf(ctx context.Context) *Terminated {
	var t *Terminated
	if errors.As(context.Cause(ctx), &t) {
		return t
	}
	return nil
}
