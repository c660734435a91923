package runbook

import (
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/policy"
)

// Exit statuses of a launch ("airlock launch"). They extend the ones of
// "airlock run" (docs/cli.md, "Exit codes").
const (
	// ExitOK: every step ran and passed, or failed with continueOnFailure.
	ExitOK = 0
	// ExitStepFailed: a step exited non-zero or was killed by a cap, and
	// halted the plan (its own status is in the result).
	ExitStepFailed = 1
	// ExitEscape: an escape signal fired; the plan was halted, the
	// sandbox frozen, evidence kept and the artifacts marked untrusted.
	ExitEscape = 121
	// ExitAudit: steps ran, but a record of the launch (a step's outcome,
	// a proxy decision, the teardown) could not be written to the audit
	// log, a full disk for one; no step ran after it. An escape keeps
	// ExitEscape (docs/cli.md, "Audit failures").
	ExitAudit = 74
	// ExitFindings: --findings were not all kept (an entry of /findings
	// left out, or a write the host refused; findingsSkipped says which),
	// whatever the steps did; an escape's ExitEscape wins over it.
	ExitFindings = 73
	// ExitSetup: airlock could not launch (a bad plan or policy, a failed
	// start-up probe, an image that does not verify, a missing
	// mechanism); nothing was run.
	ExitSetup = 125
	// ExitCannotExec: a step's command was found but is not an
	// executable file; nothing was run (126, as the shell and podman).
	ExitCannotExec = 126
	// ExitNotFound: a step's command is not installed (in the image,
	// with one); nothing was run (127, as the shell and podman).
	ExitNotFound = 127
	// ExitInterrupted and ExitTerminated: the launch was ended by SIGINT
	// (Ctrl-C) or SIGTERM: the running step was ended (SIGTERM: signalled
	// first, killed after its grace period), no later step ran, and the
	// sandbox was torn down.
	ExitInterrupted = 130
	ExitTerminated  = 143
	// ExitDenied: the command gate denied a step of the plan; nothing was
	// run.
	ExitDenied = 77
	// ExitEscalated: the command gate escalated a step of the plan and
	// denied none; nothing was run (a plan has no approval path: allow
	// the step in the policy, or run it in a session).
	ExitEscalated = 75
)

// Outcomes of a launch, in Result.Outcome.
const (
	OutcomePassed  = "passed"
	OutcomeFailed  = "failed"
	OutcomeDenied  = "denied"
	OutcomeRefused = "refused"      // a start-up probe failed: a security event
	OutcomeSetup   = "setup_failed" // airlock could not set the launch up; nothing ran
	OutcomeEscape  = "escape_suspected"
)

// Statuses of a step, in StepResult.Status.
const (
	StepPassed = "passed"  // exited 0
	StepFailed = "failed"  // exited non-zero, died of a signal, killed by a cap, or could not start
	StepNotRun = "not_run" // the plan stopped before it
	StepHalted = "halted"  // running when an escape signal fired; killed with the sandbox
	StepDenied = "denied"  // the command gate denied or escalated it: the plan was refused
)

// UntrustedMarker is the file written into the host findings directory
// when an escape was suspected: whatever the sandbox produced may have
// been shaped by whoever escaped (enforcer.UntrustedMarker, every
// sandbox's).
const UntrustedMarker = enforcer.UntrustedMarker

// Result is the outcome of a launch, as "airlock launch --json" prints it.
type Result struct {
	// TestID is the plan's test id; RunID names the launch in the audit
	// stream (every event carries it).
	TestID string `json:"testId"`
	RunID  string `json:"runId"`
	// Task is the egress task the proxy applied.
	Task string `json:"task"`
	// Outcome is one of the Outcome* constants; ExitCode the status
	// "airlock launch" exits with (the Exit* constants).
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exitCode"`
	// Reason says why the launch ended as it did, in a fixed sentence.
	Reason string `json:"reason"`
	// Image is the pinned image the sandbox ran on, nil for the host's
	// system directories.
	Image *ImageInfo `json:"image,omitempty"`
	// Probes are the start-up probes' outcomes.
	Probes []enforcer.ProbeResult `json:"probes,omitempty"`
	// Steps holds one entry per step of the plan, in order.
	Steps []StepResult `json:"steps"`
	// Untrusted is true when an escape was suspected: the findings and
	// every other artifact of the run are not to be trusted.
	Untrusted bool `json:"untrusted"`
	// Signals are the escape signals that fired.
	Signals []Signal `json:"signals,omitempty"`
	// Evidence is the directory holding the suspected-escape evidence.
	Evidence string `json:"evidence,omitempty"`
	// Findings is the host directory the findings were copied to;
	// FindingsSkipped what was not copied, with why.
	Findings        string   `json:"findings,omitempty"`
	FindingsSkipped []string `json:"findingsSkipped,omitempty"`
	// Policy is the policy that decided: where it came from (its file,
	// real path and how it was chosen) and its digest.
	Policy *policy.Info `json:"policy,omitempty"`
	// Receipt names, per control, the mechanism that enforced it.
	Receipt map[string]string `json:"receipt,omitempty"`
	// Error is why airlock could not launch or tear down, when it could
	// not.
	Error string `json:"error,omitempty"`
	// AuditError is the first record of the launch that the audit log
	// refused, and why; "" when every record was written.
	AuditError string `json:"auditError,omitempty"`
	// Audit is the checkpoint signed at the launch's end and the proofs
	// of its records in it, when the log has a signing key (docs/audit.md).
	Audit *audit.RunProof `json:"audit,omitempty"`
}

// ImageInfo names the image a sandbox ran on.
type ImageInfo struct {
	// Ref is the reference as given (PATH@sha256:DIGEST).
	Ref string `json:"ref"`
	// Digest is the pinned digest; ImageDigest the manifest that was
	// unpacked (the same unless Digest names an index).
	Digest      string `json:"digest"`
	ImageDigest string `json:"imageDigest"`
}

// StepResult is what happened to one step.
type StepResult struct {
	// Index is the step's 1-based number; Name its label.
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Tool, Command and Args are the step as the plan gave it; Path the
	// executable the command resolved to.
	Tool    string   `json:"tool"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Path    string   `json:"path,omitempty"`
	// Decision, Reason and Rule are the command gate's decision.
	Decision decision.Verdict `json:"decision"`
	Reason   string           `json:"reason"`
	Rule     string           `json:"rule"`
	// Status is one of the Step* constants.
	Status string `json:"status"`
	// ExitCode is the step's exit status as "airlock run" gives it: its
	// own, 128+N when it died of signal N, 126 when it could not start
	// inside; null when it did not run. Signal is the signal that ended
	// it; KilledBy the cap that killed it (wall, cpu, memory, pids,
	// disk) or null.
	ExitCode *int    `json:"exitCode"`
	Signal   int     `json:"signal"`
	KilledBy *string `json:"killedBy"`
	// WallMs, CPUMs and PeakMemoryBytes are what the step used.
	WallMs          int64 `json:"wallMs"`
	CPUMs           int64 `json:"cpuMs"`
	PeakMemoryBytes int64 `json:"peakMemoryBytes"`
	// Error says why the step could not start, when it could not.
	Error string `json:"error,omitempty"`
}
