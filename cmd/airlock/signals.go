package main

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// Exit statuses of a command its caller ended (docs/cli.md, "Exit
// codes"), as bash and podman give them: 128 + the signal.
const (
	exitInterrupted = 130 // SIGINT (Ctrl-C)
	exitTerminated  = 143 // SIGTERM
)

// stopFlag registers --stop-timeout on cmd: how long a command that
// airlock runs has between the SIGTERM airlock forwards and the SIGKILL
// (podman run's flag of the same name and default).
func stopFlag(cmd *cobra.Command, grace *float64) {
	cmd.Flags().Float64Var(grace, "stop-timeout", sandbox.DefaultStopGrace.Seconds(),
		"on SIGTERM, seconds the command has to end after airlock passes SIGTERM on, before everything in the sandbox is killed")
}

// signalContext returns a context that SIGINT (Ctrl-C) and SIGTERM end
// (step.Interruptible): SIGINT at once, SIGTERM with a sandbox.Terminated
// cause, so that the command in the sandbox gets SIGTERM and grace
// seconds to end before everything is killed. stop releases the signals.
func signalContext(parent context.Context, grace float64) (ctx context.Context, stop func()) {
	sig, release := step.Interruptible(parent)
	ctx, cancel := context.WithCancelCause(parent)
	unhook := context.AfterFunc(sig, func() {
		if errors.Is(context.Cause(sig), step.ErrTerminated) {
			cancel(&sandbox.Terminated{Signal: syscall.SIGTERM, Grace: time.Duration(max(grace, 0) * float64(time.Second))})
		}
		cancel(context.Canceled)
	})
	return ctx, func() {
		unhook()
		release()
		cancel(nil)
	}
}

// interruptedStatus is the exit status of a command that ctx's signal
// ended: 143 for SIGTERM, 130 for SIGINT; 0 when ctx was not ended by one.
func interruptedStatus(ctx context.Context) int {
	switch {
	case sandbox.TerminationOf(ctx) != nil:
		return exitTerminated
	case ctx.Err() != nil:
		return exitInterrupted
	}
	return 0
}
