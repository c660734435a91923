package enforcer

import (
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
)

// Exit statuses of a run (PRODUCT.md, "Command line").
const (
	// ExitGate is returned when the command gate denied or escalated.
	ExitGate = 126
	// ExitSetup is returned when airlock could not run the command (bad
	// policy, failed start-up probe, missing mechanism, setup error).
	ExitSetup = 125
	// ExitInterrupted is returned when the caller ended the run (Ctrl-C:
	// 128 + SIGINT), after every process of the sandbox was killed.
	ExitInterrupted = 130
	// ExitAudit is returned when the command ran but a record of its run
	// (its outcome, its teardown, a proxy decision) could not be written
	// to the audit log, a full disk for one: the log cannot show what the
	// run did. It takes precedence over the command's own status, which
	// Result.CommandExitCode keeps (docs/cli.md, "Audit failures").
	ExitAudit = 122
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
	// disk), or is null.
	KilledBy *string `json:"killedBy"`
	// KillReason says which cap killed the run and at what limit.
	KillReason string `json:"killReason,omitempty"`
	// WallMs and CPUMs are the run's wall-clock and CPU time.
	WallMs int64 `json:"wallMs"`
	CPUMs  int64 `json:"cpuMs"`
	// PeakMemoryBytes is the run's peak memory, 0 when unknown.
	PeakMemoryBytes int64 `json:"peakMemoryBytes"`
	// Receipt names, per control, the mechanism that enforced it.
	Receipt map[string]string `json:"receipt"`
	// Interrupted is true when the caller ended the run before the child
	// did (its context was cancelled: Ctrl-C); every process was killed.
	Interrupted bool `json:"interrupted,omitempty"`
	// EscapeSuspected says why the run's artifacts are untrusted: a
	// signal that something inside reached the host (the runbook's
	// "suspected sandbox escape"); "" when none was seen.
	EscapeSuspected string `json:"escapeSuspected,omitempty"`
	// Error is why airlock could not run the command (ExitSetup).
	Error string `json:"error,omitempty"`
	// AuditError is the first record of the run that the audit log
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
