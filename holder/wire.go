package holder

import (
	"errors"
	"time"

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
}

// The operations of a request.
const (
	opInfo    = "info"
	opExec    = "exec"
	opChanges = "changes"
	opStop    = "stop"
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
	// because the session has ended.
	Error string `json:"error,omitempty"`
	Ended bool   `json:"ended,omitempty"`
	// PatchError is why a stop's patch could not be made; the session
	// was stopped all the same.
	PatchError string `json:"patchError,omitempty"`
	// Result answers opExec, Changes opChanges (and opStop with a patch),
	// Summary opStop and Info opInfo.
	Result  *enforcer.Result         `json:"result,omitempty"`
	Changes *enforcer.Changes        `json:"changes,omitempty"`
	Summary *enforcer.SessionSummary `json:"summary,omitempty"`
	Info    *Info                    `json:"info,omitempty"`
}

// Bounds of a message: a request carries an argv and an environment, a
// response a result (its lists are bounded) or a changes manifest.
const (
	maxRequest  = 4 << 20
	maxResponse = 16 << 20
	// maxFDs is the most descriptors a request may carry.
	maxFDs = 4
)
