package enforcer

import (
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// Exit statuses of a run (PRODUCT.md, "Command line").
const (
	// ExitGate is returned when the command gate denied or escalated.
	ExitGate = 126
	// ExitSetup is returned when airlock could not run the command (bad
	// policy, failed start-up probe, missing mechanism, setup error).
	ExitSetup = 125
	// ExitEscape is returned when the sandbox's init died before the
	// command ended (sandbox.Result.InitDied): the command's own status
	// is unknown and the sandbox's integrity is not assured, as
	// `airlock launch` exits on a suspected escape.
	ExitEscape = 121
	// ExitInterrupted is returned when the caller ended the run (Ctrl-C:
	// 128 + SIGINT), after every process of the sandbox was killed.
	ExitInterrupted = 130
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
)

// Result is the outcome of one run, as `airlock run --result` writes it.
type Result struct {
	// RunID names the run in the audit stream.
	RunID string `json:"runId"`
	// Gate, Decision, Reason and Rule are the command gate's decision.
	Gate     decision.Gate    `json:"gate"`
	Decision decision.Verdict `json:"decision"`
	Reason   string           `json:"reason"`
	Rule     string           `json:"rule"`
	// Path is the absolute path that was executed, "" if none was.
	Path string `json:"path,omitempty"`
	// ExitCode is the status airlock exits with: the child's own, 128+N
	// when it died of signal N, ExitGate or ExitSetup.
	ExitCode int `json:"exitCode"`
	// Signal is the signal that ended the child, 0 if none.
	Signal int `json:"signal"`
	// KilledBy names the cap that killed the run (wall, cpu, memory, pids,
	// disk, output), or is null.
	KilledBy *string `json:"killedBy"`
	// KillReason says which cap killed the run and at what limit.
	KillReason string `json:"killReason,omitempty"`
	// WallMs and CPUMs are the run's wall-clock and CPU time.
	WallMs int64 `json:"wallMs"`
	CPUMs  int64 `json:"cpuMs"`
	// PeakMemoryBytes is the run's peak memory, 0 when unknown.
	PeakMemoryBytes int64 `json:"peakMemoryBytes"`
	// Policy is the policy that decided: where it came from (its file,
	// real path and how it was chosen) and its digest.
	Policy *policy.Info `json:"policy,omitempty"`
	// Receipt names, per control, the mechanism that enforced it.
	Receipt map[string]string `json:"receipt"`
	// Interrupted is true when the caller ended the run before the child
	// did (its context was cancelled: Ctrl-C); every process was killed.
	Interrupted bool `json:"interrupted,omitempty"`
	// EscapeSuspected says why the run's artifacts are untrusted: a
	// signal that something inside reached the host (the runbook's
	// "suspected sandbox escape"); "" when none was seen.
	EscapeSuspected string `json:"escapeSuspected,omitempty"`
	// FindingsSkipped lists the entries of /findings left out of the
	// copy-out, or copied renamed or with their mode changed, each with
	// why (an entry left out makes the run ExitFindings).
	FindingsSkipped []string `json:"findingsSkipped,omitempty"`
	// Error is why airlock could not run the command (ExitSetup), or,
	// starting "findings not kept", why the findings were not all kept
	// (ExitFindings).
	Error string `json:"error,omitempty"`
	// AuditError is the first record of the run that the audit log
	// refused, and why; "" when every record was written. With it, the
	// exit status is ExitAudit when the command ran, ExitSetup when it
	// did not (its decision could not be made durable).
	AuditError string `json:"auditError,omitempty"`
	// CommandExitCode is the status the run would have exited with (the
	// child's own, 128+N, 137 or 130) when ExitAudit replaced it.
	CommandExitCode *int `json:"commandExitCode,omitempty"`
}
