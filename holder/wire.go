package holder

import (
	"errors"
	"time"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

// ErrNoSession is matched by Dial's error when no live holder serves the
// session.
var ErrNoSession = errors.New("no such session")

// ErrEnded is matched by a Client's errors when the session has ended.
var ErrEnded = enforcer.ErrSessionEnded

// ErrNoPatch is matched by Stop's error when the session was stopped but
// the patch asked for could not be made.
var ErrNoPatch = errors.New("the session was stopped, but its patch could not be made")

// ErrAnswerLost is matched by the error of Changes and Stop when the
// holder had acted, but its answer did not all arrive: the manifest
// after a patch was written, or, for Stop, the whole answer of a holder
// that is gone since.
var ErrAnswerLost = errors.New("the holder's answer was lost")

// errNoAnswer is matched by a call's error when its answer did not come.
var errNoAnswer = errors.New("the holder did not answer")

// Info describes a live session and its holder.
type Info struct {
	// ID is the session's id; Task the egress task its proxy serves.
	ID   string `json:"id"`
	Task string `json:"task"`
	// Pid is the holder's process id, Init the sandbox init's, Watchdog
	// the watchdog's.
	Pid      int `json:"pid"`
	Init     int `json:"init"`
	Watchdog int `json:"watchdog"`
	// Started is when the session was opened.
	Started time.Time `json:"started"`
	// Policy is the digest of the policy the session decides under;
	// Audit the audit log it writes.
	Policy string `json:"policy"`
	Audit  string `json:"audit"`
	// Socket is the holder's socket.
	Socket string `json:"socket"`
	// BuiltAhead says the session's sandbox came from a pool holder's
	// pool (enforcer.Session.BuiltAhead).
	BuiltAhead bool `json:"builtAhead,omitempty"`
	// Ready is, for a pool holder (ID PoolID), how many sandboxes are
	// built and waiting.
	Ready int `json:"ready,omitempty"`
}

// The operations of a request.
const (
	opInfo    = "info"
	opExec    = "exec"
	opChanges = "changes"
	opStop    = "stop"
	// opTerminate follows an opExec on its connection when the client
	// was sent SIGTERM: the step gets SIGTERM and GraceMs to end before it
	// is killed (a hang-up without it kills the step at once).
	opTerminate = "terminate"
	opCLI       = "cli"
	opOpen      = "open"
)

// request is one message from a client.
type request struct {
	Op string `json:"op"`
	// Exec is the step to run (opExec); the step's four pipes come with
	// the message: stdin, stdout, stderr, notices.
	Exec *execRequest `json:"exec,omitempty"`
	// Patch says that a descriptor to write the patch to comes with the
	// message (opChanges, opStop).
	Patch bool `json:"patch,omitempty"`
	// Findings, when set, is where /findings goes (opStop).
	Findings *rawtext.String `json:"findings,omitempty"`
	// GraceMs is a terminated step's grace period (opTerminate).
	GraceMs int64 `json:"graceMs,omitempty"`
	// CLI is a quick client's command line (opCLI, package holder/quick);
	// its three pipes come with the message: stdin, stdout, stderr.
	CLI *cliRequest `json:"cli,omitempty"`
	// Open is the session a pool holder is asked to open (opOpen), under
	// the policy of digest Policy, which must be the pool's.
	Open *openRequest `json:"open,omitempty"`
}

// openRequest asks a pool holder for a session.
type openRequest struct {
	Session wireSession `json:"session"`
	Policy  string      `json:"policy"`
}

// cliRequest is a quick client's `airlock session exec` command line: its
// arguments after "exec", its environment and working directory, as
// bytes (base64 in JSON), so that none that is not UTF-8 is altered.
type cliRequest struct {
	Args [][]byte `json:"args"`
	Env  [][]byte `json:"env"`
	Dir  []byte   `json:"dir"`
}

// execRequest is enforcer.StepRequest without its streams. Its strings
// cross byte for byte (package rawtext): the holder decides and runs
// exactly the argv the client was given, UTF-8 or not.
type execRequest struct {
	Tool      rawtext.String  `json:"tool"`
	Command   rawtext.String  `json:"command"`
	Args      rawtext.Strings `json:"args,omitempty"`
	Env       rawtext.Strings `json:"env,omitempty"`
	Cwd       rawtext.String  `json:"cwd,omitempty"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Approval  rawtext.String  `json:"approval,omitempty"`
}

// response is the holder's one answer to a request.
type response struct {
	// Error is why the request failed; Ended is set when it failed
	// because the session has ended, Unrecorded when a record of its
	// step or of the session could not be written to the audit log
	// (enforcer.ErrAudit): a stop that failed so still stopped it.
	Error      string `json:"error,omitempty"`
	Ended      bool   `json:"ended,omitempty"`
	Unrecorded bool   `json:"unrecorded,omitempty"`
	// PatchError is why a stop's patch could not be made; the session
	// was stopped all the same.
	PatchError string `json:"patchError,omitempty"`
	// Result answers opExec, Changes opChanges (and opStop with a patch),
	// Summary opStop and Info opInfo.
	Result  *enforcer.Result         `json:"result,omitempty"`
	Changes *enforcer.Changes        `json:"changes,omitempty"`
	Summary *enforcer.SessionSummary `json:"summary,omitempty"`
	Info    *Info                    `json:"info,omitempty"`
	// ManifestFiles is how many files of Changes' manifest follow the
	// answer, in manifestParts, rather than in it: a manifest is bounded
	// by the trees' limits (docs/changes.md), a frame by maxResponse.
	ManifestFiles int `json:"manifestFiles,omitempty"`
	// Accepted is opCLI's first answer, before the command line runs;
	// ExitCode its second: the command line's exit status, its output
	// written to the client's pipes.
	Accepted bool `json:"accepted,omitempty"`
	ExitCode *int `json:"exitCode,omitempty"`
}

// manifestPart is one frame of a manifest's files, after the answer.
type manifestPart struct {
	Files []changes.FileChange `json:"files"`
}

// Bounds of a message: a request carries an argv and an environment, a
// response a result (its lists are bounded) or a changes manifest
// without its files, a manifestPart as many files as come to partBytes
// (one at least: a file's entry holds at most two paths, of at most 128
// names of 255 bytes each, and a reason, some hundreds of KiB in JSON).
const (
	maxRequest  = 4 << 20
	maxResponse = 16 << 20
	partBytes   = 1 << 20
	// maxFDs is the most descriptors a request may carry.
	maxFDs = 4
)

// fail sets r's error to err, as the holder answers it: its text, and
// what a client branches on (wireError); nil sets none.
func (r *response) fail(err error) {
	if err != nil {
		r.Error, r.Ended, r.Unrecorded = err.Error(), errors.Is(err, enforcer.ErrSessionEnded), errors.Is(err, enforcer.ErrAudit)
	}
}

// wireError is the error of an answer, as a client gets it: its text,
// under ErrEnded or enforcer.ErrAudit when it was under it in the holder;
// nil when it has none.
func wireError(r response) error {
	switch {
	case r.Error == "":
		return nil
	case r.Ended:
		return &remoteError{r.Error, ErrEnded}
	case r.Unrecorded:
		return &remoteError{r.Error, enforcer.ErrAudit}
	}
	return errors.New(r.Error)
}

// remoteError is an error the holder answered, as its text, under the
// sentinel it was under there.
type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }
