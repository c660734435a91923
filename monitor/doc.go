// Package monitor watches airlock's audit stream and raises alerts: the
// sidecar monitor of lab phase 6. The gates prevent; the monitor detects,
// and writes what it detects into the same hash-chained stream, so that
// the timeline reads "coerced at 14, ran a command at 15, egress denied
// at 16, flagged at 17".
//
// # Rules
//
// Window rules, with thresholds from the policy's "monitor" section
// (Thresholds), count events across the whole log, not per run: each
// "airlock run" makes one command decision, so an agent probing its
// allowlist shows only across runs.
//
//   - egress_deny_burst: EgressDenyBurst denied egress attempts within
//     the window (a command-and-control or exfiltration signature).
//   - command_deny_repeat: CommandDenyRepeat denied commands within the
//     window (an agent probing its allowlist).
//
// "Within the window" means the first and the last of the counted events
// are less than the window apart, by their ts. When a rule fires, its
// count starts again from zero, so a sustained attack raises one alert per
// threshold's worth of events, not one per event.
//
// Event rules fire on every matching event:
//
//   - resource_kill: a run killed by a resource cap (OWASP ASI09).
//   - metadata_access: a denied egress attempt at a cloud metadata or
//     link-local destination, by name or address (the egress package's
//     built-in floor), or at any always-blocked entry of the policy.
//   - escape_suspected: a lifecycle escape_suspected event (the runbook's
//     "suspected sandbox escape").
//   - startup_refused: a lifecycle startup_refused event (a start-up
//     probe failed inside the sandbox, the runbook's "abort, do not run
//     tests"). A setup_failed event (airlock could not set the run up: a
//     command not installed, an image that does not verify, an unmet
//     require) is not a security event and raises nothing.
//   - audit_repaired: the log had a damaged line that a writer closed off.
//
// An alert is an audit event of kind behavioral with decision alert; its
// context names the rule (alert), the events that triggered it
// (triggerSeqs, and count and windowSeconds for window rules), and the
// run, tool, task and host of the last of them.
//
// # Live and replayed
//
// Live, a Monitor is an audit.Hook: it sees, under the log's file lock,
// the events that other airlock processes appended to the same file, and
// the alerts it returns are written right after the event that triggered
// them, in the same durable write. Three denied commands in three separate
// airlock processes therefore raise one alert, in the process that wrote
// the third. Replay recomputes the alerts from a file; since a Monitor
// resets a window rule when it sees that rule's recorded alert, replaying
// a log with the same thresholds reproduces the alerts written live.
package monitor
