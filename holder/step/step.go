// Package step is one `airlock session exec` step as both clients of a
// session's holder hand it over: the full command line (cmd/airlock) and
// the quick client (holder/quick), which runs from an early package
// initialiser. Each parses the command line with Parse into a Request,
// hands it to the holder with Exec, which relays the step's streams, and
// exits with the status the holder answers. The holder (package holder)
// runs the Request on its session and tells its outcome on the client's
// streams as `airlock run` does (enforcer.Report): the same flags, lines,
// result object and exit statuses from either client.
//
// It imports only the lower standard library (not strings, bytes, fmt,
// encoding/binary, encoding/json or path/filepath, which Go initialises
// late), so that the quick client is initialised among the first
// packages; cmd/airlock's TestInitRunsEarly keeps it so. A Request and an
// Answer are JSON, written and read here (wire.go), in the frames of the
// holder's other messages (Frame): what encoding/json writes for the same
// fields, each string as the base64 of its bytes, so that none that is
// not UTF-8 is altered on the way.
//
// Who controls what: the command line and the environment are the
// caller's (the agent's harness): Parse refuses what it cannot read, and
// the quick client builds no path from a session id that is not one. A
// Request reaches the holder only from a process of the same user (the
// holder checks its peer credentials), which decodes it strictly (unknown
// and repeated fields, bad base64 refused) within the holder's bound on a
// request. The answers are the holder's (its peer credentials checked
// too), read within maxAnswer. The step's output is the contained code's:
// relayed byte for byte, and escaped by the holder when the client's
// stream is a terminal (Request.StdoutTerminal).
package step

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Request is one step, as a client parsed it from its command line.
type Request struct {
	// Session is the id of the session to run it in.
	Session string
	// Tool is the agent tool asking to run Argv, the command and its
	// arguments.
	Tool string
	Argv []string
	// Env is added to the child's environment, NAME=VALUE (a bare --env
	// NAME is looked up in the client's environment).
	Env []string
	// Cwd is the working directory inside, relative to /workspace.
	Cwd string
	// Timeout, when positive, lowers the tool's wall-clock cap.
	Timeout time.Duration
	// Approval is the id of an approved request to redeem.
	Approval string
	// Grace is how long the step has to end after SIGTERM when the
	// client was sent SIGTERM (--stop-timeout).
	Grace time.Duration
	// JSON captures the child's output and prints the result object on
	// stdout; Result writes the result object to this file too (an
	// absolute path, or "-" for stdout); Quiet prints none of airlock's
	// own lines but errors.
	JSON   bool
	Result string
	Quiet  bool
	// StdoutTerminal and StderrTerminal say that the client's stdout and
	// stderr are terminals, where the child's output is escaped (Exec
	// sets them).
	StdoutTerminal, StderrTerminal bool
}

// Answer is one of the holder's two answers to a Request: first whether
// it took the step (Accepted, else Error says why), then, once the step
// ran and all of its output was written, its exit status (ExitCode).
type Answer struct {
	Accepted bool
	Error    string
	ExitCode int
}

// The operations of the holder's requests that this package sends: a
// step, then, on the same connection, the client's being terminated.
const (
	Op          = "step"
	OpTerminate = "terminate"
)

// ErrTerminated is the cause of a context that SIGTERM ended
// (Interruptible): Exec then asks the holder to pass SIGTERM on, and the
// step has its Grace to end before it is killed.
var ErrTerminated = errors.New("step: terminated")

// ErrNoAnswer is Exec's error when the holder took the step but ended
// before it answered its status.
var ErrNoAnswer = errors.New("the holder ended before it answered")

// NotTaken is Exec's error when the holder did not take the step: it
// says why. Nothing ran, and stdin was not read.
type NotTaken struct{ Reason string }

// Error is the holder's reason, or why it was not asked.
func (e *NotTaken) Error() string { return e.Reason }

// Interruptible returns a context that SIGINT (Ctrl-C) ends, and SIGTERM
// with the cause ErrTerminated, and stop, which releases the signals.
func Interruptible(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM {
				cancel(ErrTerminated)
			}
			cancel(nil)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
