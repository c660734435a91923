package sandbox

import (
	"errors"
	"io"
	"time"
)

// Step is one command of a session (StartSession): it runs in the
// session's namespaces, filesystem view and cgroup, after the previous
// step has ended and every process it left behind has been killed.
type Step struct {
	// Path is the absolute path of the command inside the sandbox, already
	// chosen by the command gate.
	Path string
	// Tree is Config.Tree for the step: Path is a workspace program the
	// init resolves in Tree.
	Tree string
	// Args are its arguments, Args[0] included; empty means []string{Path}.
	Args []string
	// Env is its whole environment; the proxy variables are added when
	// the session has a proxy listener.
	Env []string
	// Dir is its working directory inside; "" means /workspace.
	Dir string
	// Stdin, Stdout and Stderr are its standard streams, always through
	// pipes. Nil Stdin reads as empty; nil Stdout or Stderr discards.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Caps are the step's own caps; nil means the session's
	// (Config.Caps).
	Caps *StepCaps
	// EndSessionOnKill ends the session when a cap kills this step: every
	// process is killed and later Execs fail with ErrSessionEnded (Close
	// still copies the findings out and tears down). Without it a killed
	// step is only a result, and the session goes on.
	EndSessionOnKill bool
	// Ready, when not nil, is called once the step's pipes are made and
	// its counters read, just before the init is asked to run it: its
	// error is Exec's, and nothing runs then. The enforcer waits there
	// for the step's decision to be durable, which is written meanwhile.
	Ready func() error
}

// StepCaps are the caps that apply to one step alone. Disk and open
// files are the session's (see StartSession).
type StepCaps struct {
	// MemoryBytes and Tasks cap the step's processes together, in a
	// cgroup of the step's own under the session's (rlimits where the
	// host gives none); 0 means the session's. Each is lowered to what
	// the session has left when the step starts (limits.Child.Limit).
	MemoryBytes, Tasks int64
	// Wall is the step's wall-clock budget, counted from its start.
	Wall time.Duration
	// CPU is the CPU time of the step's processes together. It may not
	// exceed the session's Caps.CPU, which every process of the session
	// also carries as RLIMIT_CPU.
	CPU time.Duration
	// OutputBytes caps the step's stdout and stderr together (see
	// limits.Caps.OutputBytes); 0 means the session's Caps.OutputBytes,
	// which it may not exceed.
	OutputBytes int64
}

// Teardown is what Session.Close reports about the whole session.
type Teardown struct {
	// Steps is the number of steps that started.
	Steps int
	// CPU is the CPU time of the whole session, init included.
	CPU time.Duration
	// PeakMemoryBytes is the session's peak memory, 0 when unknown.
	PeakMemoryBytes int64
	// Receipt names, per control, the mechanism that enforced it.
	Receipt map[string]string
	// FindingsSkipped lists the /findings entries left out of the
	// copy-out, or copied renamed or with their mode changed, with why.
	FindingsSkipped []string
	// Frozen is true when the session was frozen (Freeze) before Close.
	Frozen bool
}

// ErrSessionEnded is matched by the error of Exec on a session that has
// ended: closed, killed by its context, or ended by a step (its init
// died, or EndSessionOnKill).
var ErrSessionEnded = errors.New("sandbox: the session has ended")

// ErrStepStart is matched by the error of Exec when the step could not be
// started inside (no such file, not executable); the session goes on. A
// single run's Release matches it too when its target could not start.
var ErrStepStart = errors.New("sandbox: the command could not start")

// ErrFrozen is matched by the error of Exec on a frozen session.
var ErrFrozen = errors.New("sandbox: the session is frozen")
