// Package runbook automates the runbook of a security team that runs
// adversarial tests in a sandbox ("airlock launch"): a verified launch, a
// test plan run step by step in one sandbox, findings persisted out
// write-only, a teardown that leaves nothing behind, and a suspected-escape
// procedure that preserves evidence.
//
// # Plans
//
// A plan (Plan, LoadPlan, ParsePlan; JSON Schema in
// schemas/plan.schema.json, example in examples/plan.json) names a test
// id, an optional egress task and the steps: tool, command, args, an
// optional name and continueOnFailure. Parsing is strict: an unknown or
// misspelt field (field names are case-sensitive), a wrong type, a null,
// a duplicate key, trailing data or a file over MaxPlanBytes is an error
// at its line and column, and nothing is guessed.
//
// # The launch
//
// Launch decides every step at the command gate first and records each
// decision: a plan is approved as a whole, so one denied or escalated step
// refuses it before anything starts (ExitDenied, or ExitEscalated when
// every refused step was escalated). It then verifies the
// pinned image (Options.Image), finds every command as a session's step
// finds it (enforcer.Locate: a host program now, through the policy's
// search path or in the image; a workspace program such as
// /workspace/.venv/bin/pytest inside the sandbox, as its step starts;
// a shell rule's script with the shell's own environment), starts one
// sandbox (enforcer.StartSandbox) and runs the start-up probes inside it,
// after the privilege drop: uid, capability sets, no_new_privs, seccomp,
// Landlock, only lo and no route, /root and /home, and a Canary — a host
// file in a 0700 directory and a listener on the host's loopback — out of
// reach (the canary is internal/canary's, every sandbox's). Any failure
// runs nothing and writes startup_refused with the reason (ExitSetup).
// Then sandbox_launched is written with the test id, the image digest and
// each probe's outcome, the egress proxy serves the plan's task inside
// the sandbox's network namespace — enforcer's, as airlock run's: the
// task's CA and the sandbox's bundle of it, its credentials and its
// budgets (the task's per step, the session's for the plan) — and the
// steps run in order in the same workspace, as the steps of an
// enforcer.Session opened on the sandbox (Enforcer.SessionOn;
// Session.ExecDecided, with the decision the launch recorded first: its
// outcome recorded, its result told with run's exit statuses). From
// sandbox_launched on, the launch's records go through that session
// (Session.Record), so that an alert of the policy's session.onAlert
// that one raises stops the launch as it stops a session (SignalAlert).
// The sandbox's configuration
// is enforcer's too: every file no sandbox may see (the policy, the audit
// log, the signing key's directory, the credentials' files) is hidden,
// and the plan. A failing step halts the plan unless it
// says continueOnFailure (ExitStepFailed). Teardown kills every process,
// copies /findings out to Options.Findings (the sandbox never sees that
// directory), removes the cgroup and mounts, deletes the workspace copy,
// checks from the host that no process is left, and writes
// sandbox_torn_down.
//
// The caps of the one sandbox: memory, tasks, disk and open files are
// shared by all steps (files persist from step to step), so they are the
// largest any step's tool allows; each step runs under its own tool's
// wall-clock and CPU caps. All steps' tools must share one filesystem
// view.
//
// # Suspected escape
//
// After every step, and for some during it, the launch looks for the
// signals of an escape (the Signal* constants): a process of the sandbox
// outside its cgroup, a break in the audit chain since the launch event,
// a step killed by SIGSYS (the seccomp filter's kill on a foreign-ABI
// call), a refused request for a cloud metadata or other always-blocked
// destination, a start-up probe that fails when re-run, a write to a
// watched host path (airlock's own binary, the account databases, the
// policy, the plan, the host's findings and workspace directories), a
// connection to the canary listener, and an alert of session.onAlert.
// On the first, it halts the plan and
// follows the suspected-escape procedure of every sandbox
// (enforcer.Suspect, as a session stopped by its alerts does): it
// freezes the sandbox (cgroup freezer, else SIGSTOP), writes
// escape_suspected, and keeps the evidence in
// Options.EvidenceDir/RUNID: summary.json, the sandbox's own snapshot in
// sandbox/ (processes, mounts, namespaces, network interfaces, routes and
// sockets, workspace mtimes, and the workspace itself), the host process
// tree of the sandbox with its sockets, every network namespace on the
// host, the watched host paths before and after, and the audit log since
// the launch. The sandbox is then torn down, the findings are copied out
// with an UntrustedMarker file beside them, Result.Untrusted is set, and
// the launch exits ExitEscape.
package runbook
