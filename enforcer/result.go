package enforcer

import (
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// Exit statuses of a run or a session's step (docs/result.md).
const (
	// ExitSetup is returned when airlock could not run the command (bad
	// policy, failed start-up probe, missing mechanism, setup error).
	ExitSetup = 125
	// ExitEscape is returned when the sandbox's init died before the
	// command ended (sandbox.Result.InitDied): the command's own status
	// is unknown and the sandbox's integrity is not assured, as
	// `airlock launch` exits on a suspected escape.
	ExitEscape = 121
	// ExitCannotExec is returned when the command was found but could not
	// be executed inside the sandbox.
	ExitCannotExec = 126
	// ExitNotFound is returned when the command gate allowed a command
	// that is not installed (in the image, with one); nothing ran.
	ExitNotFound = 127
	// ExitDenied is returned when the command gate denied the command, or
	// a person or decider denied its escalation (EX_NOPERM). Retrying the
	// same command cannot help.
	ExitDenied = 77
	// ExitEscalated is returned when the command gate escalated the
	// command and no approval let it run (EX_TEMPFAIL): it may run once
	// an approval is given (Result.Refusal.Approval says how).
	ExitEscalated = 75
	// ExitInterrupted is returned when the caller ended the run (Ctrl-C:
	// 128 + SIGINT), after every process of the sandbox was killed.
	ExitInterrupted = 130
	// ExitTerminated is returned when the caller ended the run with
	// SIGTERM (its context cancelled with a sandbox.Terminated cause):
	// the command got SIGTERM, then everything was killed after the grace
	// period unless it had ended (128 + SIGTERM).
	ExitTerminated = 143
	// ExitAudit is returned when the command ran but a record of its run
	// (its outcome, its teardown, a proxy decision) could not be written
	// to the audit log, a full disk for one: the log cannot show what the
	// run did. It takes precedence over the command's own status, which
	// Result.CommandExitCode keeps (docs/cli.md, "Audit failures").
	ExitAudit = 74
	// ExitFindings is returned when the run asked for --findings and they
	// could not all be kept: an entry of /findings was left out (the
	// result's findingsSkipped says which and why) or the host refused a
	// write. It replaces the child's own status: data the caller asked to
	// keep is not there, so the run failed (docs/cli.md).
	ExitFindings = 73
	// ExitUsage is returned when the request itself was refused before
	// anything was decided or run: its Env sets a variable airlock sets
	// (ErrEnv). It is the command line's status for a usage error.
	ExitUsage = 2
)

// ResultSchemaVersion is the version of Result's JSON form. It changes
// only when a field changes meaning or is removed; new fields may appear
// without it changing (docs/result.md).
const ResultSchemaVersion = 1

// Result is the outcome of one run or one step of a session: what `airlock
// run --json` and `airlock session exec --json` print, and --result
// writes. Its JSON Schema is ResultSchema (`airlock schema result`).
type Result struct {
	// SchemaVersion is ResultSchemaVersion.
	SchemaVersion int `json:"schemaVersion" jsonschema:"required,enum=1"`
	// RunID names the run in the audit stream: the run's id, or the
	// session's for a step.
	RunID string `json:"runId" jsonschema:"required"`
	// Session is the session's id; "" for `airlock run`.
	Session string `json:"session,omitempty"`
	// Step is the step's number in its session, counting every command
	// asked for, refused ones too; 1 for `airlock run`.
	Step int `json:"step" jsonschema:"required,minimum=1"`
	// Gate, Decision, Reason and Rule are the command gate's decision.
	Gate     decision.Gate    `json:"gate" jsonschema:"required"`
	Decision decision.Verdict `json:"decision" jsonschema:"required,type=string,enum=allow,enum=deny,enum=escalate"`
	Reason   string           `json:"reason" jsonschema:"required"`
	Rule     string           `json:"rule" jsonschema:"required"`
	// Script is set when a shell rule decided the command's script,
	// command by command: the shell, and every command found in the script
	// with its own decision (docs/policy.md, "Shell rules").
	Script *decision.Script `json:"script,omitempty"`
	// Refusal is set when the command did not run because it was refused
	// (by the command gate, or for want of an approval): why, and what the
	// agent can do about it. It is null when the command ran.
	Refusal *Refusal `json:"refusal" jsonschema:"required,nullable"`
	// Approval is the approval that let an escalated command run, if one
	// did.
	Approval *ApprovalUse `json:"approval,omitempty"`
	// Path is the absolute path that was executed, "" if none was.
	Path string `json:"path,omitempty"`
	// ExitCode is the status airlock exits with: the child's own, 128+N
	// when it died of signal N, or one of the Exit constants.
	ExitCode int `json:"exitCode" jsonschema:"required,minimum=0,maximum=255"`
	// Signal is the signal that ended the child, 0 if none.
	Signal int `json:"signal" jsonschema:"required,minimum=0"`
	// KilledBy names the cap that killed the command (wall, cpu, memory,
	// pids, disk, output, or session-wall for the session's own wall
	// clock), or is null.
	KilledBy *string `json:"killedBy" jsonschema:"required,nullable"`
	// KillReason says which cap killed the command and at what limit.
	KillReason string `json:"killReason,omitempty"`
	// StartedAt is when the command gate was asked; WallMs and CPUMs are
	// the command's wall-clock and CPU time.
	StartedAt time.Time `json:"startedAt" jsonschema:"required"`
	WallMs    int64     `json:"wallMs" jsonschema:"required,minimum=0"`
	CPUMs     int64     `json:"cpuMs" jsonschema:"required,minimum=0"`
	// PeakMemoryBytes is the peak memory, 0 when unknown: the run's, or
	// for a step the step's own processes' largest resident set.
	PeakMemoryBytes int64 `json:"peakMemoryBytes" jsonschema:"required,minimum=0"`
	// Stdout and Stderr are the child's output when it was captured
	// (--json), bounded; absent when it was streamed.
	Stdout *Output `json:"stdout,omitempty"`
	Stderr *Output `json:"stderr,omitempty"`
	// Egress lists the egress decisions made while the command ran, in
	// order, at most MaxEgressEntries; EgressOmitted counts those left out.
	Egress        []EgressDecision `json:"egress" jsonschema:"required"`
	EgressOmitted int              `json:"egressOmitted,omitempty"`
	// EgressFailed lists the requests the egress gate allowed that then
	// could not reach their destination (a name that did not resolve, a
	// refused connection, a failed TLS handshake), in order, each with
	// the allowing decision's rule and the failure as its reason; at most
	// MaxEgressEntries, those left out counted in EgressOmitted too.
	EgressFailed []EgressDecision `json:"egressFailed" jsonschema:"required"`
	// Alerts lists the monitor's alerts raised while the command was
	// decided and ran, at most MaxAlertEntries.
	Alerts []Alert `json:"alerts" jsonschema:"required"`
	// FindingsSkipped lists the entries of /findings left out of the
	// copy-out, or copied renamed or with their mode changed, each with
	// why (an entry left out makes the run ExitFindings; a session's are
	// in its teardown).
	FindingsSkipped []string `json:"findingsSkipped" jsonschema:"required"`
	// Policy is the policy that decided: where it came from (its file,
	// real path and how it was chosen) and its digest.
	Policy *policy.Info `json:"policy,omitempty"`
	// Receipt names, per control, the mechanism that enforced it.
	Receipt map[string]string `json:"receipt" jsonschema:"required"`
	// Interrupted is true when the caller ended the run before the child
	// did (its context was cancelled: Ctrl-C, or SIGTERM, which gives the
	// child SIGTERM and a grace period first); every process was killed.
	Interrupted bool `json:"interrupted,omitempty"`
	// EscapeSuspected says why the run's artifacts are untrusted: a
	// signal that something inside reached the host (the runbook's
	// "suspected sandbox escape"); "" when none was seen.
	EscapeSuspected string `json:"escapeSuspected,omitempty"`
	// Error is why airlock could not run the command (ExitSetup), or,
	// starting "findings not kept", why the findings were not all kept
	// (ExitFindings).
	Error string `json:"error,omitempty"`
	// AuditError is the first record of the command that the audit log
	// refused, and why; "" when every record was written. With it, the
	// exit status is ExitAudit when the command ran, ExitSetup when it
	// did not (its decision could not be made durable).
	AuditError string `json:"auditError,omitempty"`
	// CommandExitCode is the status the run would have exited with (the
	// child's own, 128+N, 137 or 130) when ExitAudit replaced it.
	CommandExitCode *int `json:"commandExitCode,omitempty"`
	// Audit proves the run's records: the checkpoint signed at the end of
	// the run and each record's inclusion proof in it (docs/audit.md,
	// "Proofs"); absent when the audit log has no signing key.
	Audit *audit.RunProof `json:"audit,omitempty"`
}

// Refusal says why a command did not run and what can be done about it,
// in terms an agent can act on.
type Refusal struct {
	// Gate, Decision, Reason and Rule are the refusing decision: the
	// command gate's, or for an escalation that was not approved, why
	// not.
	Gate     decision.Gate `json:"gate" jsonschema:"required"`
	Decision string        `json:"decision" jsonschema:"required,enum=deny,enum=escalate"`
	Reason   string        `json:"reason" jsonschema:"required"`
	Rule     string        `json:"rule" jsonschema:"required"`
	// Retryable says whether the same command can run later without a
	// change of policy: true only for an escalation, once approved.
	Retryable bool `json:"retryable" jsonschema:"required"`
	// Justification is the matched rule's justification from the policy.
	Justification string `json:"justification,omitempty"`
	// AllowedSignatures are the argument signatures the tool's allow
	// rules accept for this command, what would pass instead: only on a
	// denial by default, never when a deny or escalate rule matched.
	AllowedSignatures []cmdgate.Signature `json:"allowedSignatures,omitempty"`
	// Approval says how an escalated command gets its approval.
	Approval *ApprovalHint `json:"approval,omitempty"`
}

// ApprovalHint is how an escalated command can be approved.
type ApprovalHint struct {
	// ID is the approval request waiting for an answer; "" when none
	// could be made (no approval store).
	ID string `json:"id,omitempty"`
	// Expires is when the request lapses.
	Expires *time.Time `json:"expires,omitempty"`
	// How says, in a sentence, what a person (or the harness) does.
	How string `json:"how" jsonschema:"required"`
}

// ApprovalUse is the approval that let an escalated command run once.
type ApprovalUse struct {
	// ID is the approval request's id.
	ID string `json:"id" jsonschema:"required"`
	// By says who answered and how.
	By string `json:"by" jsonschema:"required"`
	// Reason is the answerer's own words, if any.
	Reason string `json:"reason,omitempty"`
}

// Output is one captured stream of the child.
type Output struct {
	// Text is what was kept, as UTF-8 (invalid bytes replaced by U+FFFD).
	Text string `json:"text" jsonschema:"required"`
	// Bytes counts every byte the child wrote, kept or not.
	Bytes int64 `json:"bytes" jsonschema:"required,minimum=0"`
	// Truncated is true when Text holds less than Bytes.
	Truncated bool `json:"truncated" jsonschema:"required"`
}

// EgressDecision is one egress gate decision made while a command ran.
type EgressDecision struct {
	// Host and Port are the destination as the gate saw it; Protocol how
	// it was asked for (http, connect, socks5).
	Host     string `json:"host" jsonschema:"required"`
	Port     uint16 `json:"port" jsonschema:"required"`
	Protocol string `json:"protocol,omitempty"`
	// Decision, Reason and Rule are the gate's.
	Decision string `json:"decision" jsonschema:"required,enum=allow,enum=deny"`
	Reason   string `json:"reason" jsonschema:"required"`
	Rule     string `json:"rule,omitempty"`
}

// Alert is one alert the monitor raised.
type Alert struct {
	// Alert names the monitor rule; Reason says why it fired.
	Alert  string `json:"alert" jsonschema:"required"`
	Reason string `json:"reason" jsonschema:"required"`
}

// Bounds of a result's lists.
const (
	MaxEgressEntries = 256
	MaxAlertEntries  = 64
)

// newResult is the result of a command the gate decided d on.
func newResult(runID, session string, step int, d decision.Decision, at time.Time) Result {
	return Result{SchemaVersion: ResultSchemaVersion, RunID: runID, Session: session, Step: step,
		Gate: d.Gate, Decision: d.Verdict, Reason: d.Why(), Rule: d.Rule, Script: d.Script, StartedAt: at.UTC(),
		Egress: []EgressDecision{}, EgressFailed: []EgressDecision{}, Alerts: []Alert{}, FindingsSkipped: []string{}, Receipt: map[string]string{}}
}

// SetupResult is the result of a command that airlock could not even
// decide (a bad policy, an audit log that does not open, a session that
// is gone): ExitSetup, with err's text.
func SetupResult(runID, session string, step int, err error) Result {
	res := newResult(runID, session, max(step, 1), decision.Decision{}, time.Now())
	res.Gate, res.Reason = "", ""
	res.ExitCode = ExitSetup
	if err != nil {
		res.Error = err.Error()
	}
	return res
}
