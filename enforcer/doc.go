// Package enforcer composes airlock's gates into one run: the command
// gate decides, the decision is made durable in the audit stream, the
// sandbox starts with the egress proxy serving inside its network
// namespace, every egress decision is audited before the connection it
// allows, and the outcome — exit, signal, the cap that killed the run and
// the mechanism that enforced each control — is audited and returned as a
// Result (the contract in docs/result.md).
//
// A Session (OpenSession) is the same composition across an agent's tool
// calls: one sandbox, its /workspace and /tmp kept from step to step, the
// proxy serving one task throughout, each step decided against the tool
// that asks and recorded before it runs (docs/sessions.md). A run's
// command and a session's step take one path from the decision to the
// result (attempt.go), the run's in a sandbox of its own.
//
// An escalated command runs once on an approval: a redeemed one
// (Options.Approvals) or the Approver's answer; every request and answer
// is audited.
//
// Every sandbox's configuration and way out (the proxy with its
// task's gate, CA, credentials, budgets and audit record) come from
// here, for a run, a session and a plan's launch alike: a Sandbox
// (StartSandbox) is a sandbox of several steps with its way out, which a
// Session runs its steps in, a Pool builds ahead, and a plan's launch
// (runbook) starts and probes itself, then runs its steps in as a
// Session's (SessionOn), with the decisions it took and recorded first.
// NewProxy serves the same proxy on its own, for one task or a shared
// gateway's clients (airlock proxy).
//
// This is the one place where the controls meet; the command line and
// other embedders call Run, OpenSession and NewProxy.
package enforcer
