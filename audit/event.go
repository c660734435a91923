package audit

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// Kind says what an event is about. The lab's monitor kinds are command,
// egress, resource and behavioral; airlock adds lifecycle.
type Kind string

// The kinds of event.
const (
	// KindCommand is a command gate decision.
	KindCommand Kind = "command"
	// KindEgress is an egress gate decision on one connection attempt.
	KindEgress Kind = "egress"
	// KindResource is a run's resource outcome: killed by a cap
	// (decision kill, context killedBy) or finished within its caps
	// (decision info, with its usage).
	KindResource Kind = "resource"
	// KindBehavioral is an alert raised by the monitor (decision alert,
	// context alert names the rule). Alerts keep the lab's kind for what
	// the monitor flags rather than adding an "alert" kind.
	KindBehavioral Kind = "behavioral"
	// KindLifecycle is a record of the sandbox's or the log's life:
	// chain_started, audit_repaired, sandbox_launched, sandbox_torn_down,
	// escape_suspected, startup_refused, setup_failed (context event
	// names which). A start-up probe that fails is a lifecycle event with
	// decision deny (startup_refused), a security event; a setup that
	// fails for any other reason is setup_failed, decision info.
	KindLifecycle Kind = "lifecycle"
)

// Valid reports whether k is one of the kinds above.
func (k Kind) Valid() bool {
	switch k {
	case KindCommand, KindEgress, KindResource, KindBehavioral, KindLifecycle:
		return true
	}
	return false
}

// The values of an event's decision field. Where a gate decided, they are
// the decision package's verdict names.
const (
	DecisionAllow    = "allow"    // a gate allowed
	DecisionDeny     = "deny"     // a gate denied (or a start-up probe failed)
	DecisionEscalate = "escalate" // the command gate wants a human's approval
	DecisionKill     = "kill"     // a resource cap killed the run's process tree
	DecisionAlert    = "alert"    // the monitor raised an alert (kind behavioral)
	DecisionInfo     = "info"     // a record that decides nothing
)

func validDecision(d string) bool {
	switch d {
	case DecisionAllow, DecisionDeny, DecisionEscalate, DecisionKill, DecisionAlert, DecisionInfo:
		return true
	}
	return false
}

// Lifecycle event names, written in Context.Event. The sandbox's names
// are the runbook's.
const (
	EventChainStarted    = "chain_started"     // first line of every log
	EventAuditRepaired   = "audit_repaired"    // a damaged line was closed off
	EventSandboxLaunched = "sandbox_launched"  // start-up checks passed
	EventSandboxTornDown = "sandbox_torn_down" // teardown finished
	EventEscapeSuspected = "escape_suspected"  // a signal suggests an escape
	EventStartupRefused  = "startup_refused"   // a start-up probe failed inside the sandbox (decision deny)
	EventSetupFailed     = "setup_failed"      // airlock could not set the run up, nothing ran (decision info)
	// EventEgressBudgetReached marks an egress budget's cap reached
	// (kind egress, decision deny; docs/egress.md, "Budgets").
	EventEgressBudgetReached = "egress_budget_reached"
	// EventEgressFailed marks the end of an allowed egress request that
	// could not reach its destination: a name that did not resolve, a
	// refused connection, a failed TLS handshake (kind egress, decision
	// info; docs/egress.md, "Allowed, then failed").
	EventEgressFailed = "egress_failed"
)

// Event is one line of the audit stream. Seq, TS, Prev and Hash are set
// by the writer; the caller fills in the rest.
type Event struct {
	// Seq is the line's number in the chain, from 1.
	Seq uint64 `json:"seq"`
	// TS is when the writer appended the line, in UTC.
	TS time.Time `json:"ts"`
	// Kind says what the event is about.
	Kind Kind `json:"kind"`
	// Decision is one of the Decision constants.
	Decision string `json:"decision"`
	// Reason says why, in a fixed sentence per path. Never empty.
	Reason string `json:"reason"`
	// Context carries the subject of the event.
	Context Context `json:"context"`
	// Prev is the hash of the previous line (Genesis for the first).
	Prev string `json:"prev"`
	// Hash is this line's hash (see the package documentation).
	Hash string `json:"hash"`
}

// Context is the subject of an event. Every field is optional and left
// out of the line when empty.
type Context struct {
	// RunID names one airlock run; every event of a run carries it.
	RunID string `json:"runId,omitempty"`
	// Tool is the agent tool that asked for the run.
	Tool string `json:"tool,omitempty"`
	// Task is the egress task of the run.
	Task string `json:"task,omitempty"`
	// Gate is the control that decided.
	Gate decision.Gate `json:"gate,omitempty"`
	// Rule is the matched rule's name.
	Rule string `json:"rule,omitempty"`
	// Event names a lifecycle event (the Event constants).
	Event string `json:"event,omitempty"`

	// Command is the command as requested; Path the absolute path it
	// resolved to; Args its arguments.
	Command string   `json:"command,omitempty"`
	Path    string   `json:"path,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env is what the run added to the command's environment, NAME=VALUE.
	Env []string `json:"env,omitempty"`
	// ArgvSHA256 is the lower-case hex SHA-256 of the whole command line
	// as asked, before any shortening: Command, then each of Args, each
	// followed by a NUL byte (as /proc/PID/cmdline holds it). EnvSHA256 is
	// the same over Env. The writer sets them on every event with a
	// command or environment when the caller has not (docs/audit.md,
	// "Long fields").
	ArgvSHA256 string `json:"argvSha256,omitempty"`
	EnvSHA256  string `json:"envSha256,omitempty"`
	// Tails keeps the ends of the fields that were shortened (Truncated):
	// a shortened field keeps its start, and its end is here.
	Tails []Tail `json:"tails,omitempty"`

	// Host and Port are an egress destination as requested; Protocol how
	// it was asked for (http, connect, socks5); Addresses what it
	// resolved to or was dialled at.
	Host      string   `json:"host,omitempty"`
	Port      uint16   `json:"port,omitempty"`
	Protocol  string   `json:"protocol,omitempty"`
	Addresses []string `json:"addresses,omitempty"`

	// KilledBy names the cap that killed a run: wall, cpu, memory, pids
	// or disk.
	KilledBy string `json:"killedBy,omitempty"`
	// ExitCode is the run's exit status, when it exited.
	ExitCode *int `json:"exitCode,omitempty"`
	// Signal is the signal that ended the run, when one did.
	Signal int `json:"signal,omitempty"`
	// WallMs, CPUMs and PeakMemoryBytes are the run's usage.
	WallMs          int64 `json:"wallMs,omitempty"`
	CPUMs           int64 `json:"cpuMs,omitempty"`
	PeakMemoryBytes int64 `json:"peakMemoryBytes,omitempty"`
	// PID is a process id the event is about.
	PID int `json:"pid,omitempty"`

	// Alert names the monitor rule that raised an alert; Count events
	// within WindowSeconds triggered it, those with TriggerSeqs.
	Alert         string   `json:"alert,omitempty"`
	Count         int      `json:"count,omitempty"`
	WindowSeconds float64  `json:"windowSeconds,omitempty"`
	TriggerSeqs   []uint64 `json:"triggerSeqs,omitempty"`

	// ChainID is the log's random identity, on its first line only.
	ChainID string `json:"chainId,omitempty"`
	// RepairedBytes and RepairedSHA256 describe the damaged line that an
	// audit_repaired event closes off.
	RepairedBytes  int64  `json:"repairedBytes,omitempty"`
	RepairedSHA256 string `json:"repairedSha256,omitempty"`

	// Truncated says the writer shortened long fields to fit the line
	// limit (see MaxEventBytes).
	Truncated bool `json:"truncated,omitempty"`
	// Details holds anything else worth keeping (an image digest, a
	// policy digest, a test id), as strings.
	Details map[string]string `json:"details,omitempty"`
}

// Tail is the end of a shortened field: Field names it ("command",
// "args.3", "env.0"), Bytes is its whole length, and Tail its last bytes.
// The field itself keeps its first bytes; what lies between is covered by
// ArgvSHA256 or EnvSHA256.
type Tail struct {
	Field string `json:"field"`
	Bytes int    `json:"bytes"`
	Tail  string `json:"tail"`
}

// FromDecision returns the event for a gate's decision: its kind follows
// the gate (the sandbox gate's decisions are lifecycle events), decision
// the verdict's name, reason the decision's reason, and context the gate
// and rule over ctx.
func FromDecision(d decision.Decision, ctx Context) Event {
	kind := KindLifecycle
	switch d.Gate {
	case decision.GateCommand:
		kind = KindCommand
	case decision.GateEgress:
		kind = KindEgress
	case decision.GateResource:
		kind = KindResource
	}
	ctx.Gate = d.Gate
	ctx.Rule = d.Rule
	if d.Script != nil {
		ctx.Details = maps.Clone(ctx.Details)
		if ctx.Details == nil {
			ctx.Details = map[string]string{}
		}
		ctx.Details["shell"] = d.Script.Shell
		ctx.Details["commands"] = scriptLines(d.Script)
	}
	return Event{Kind: kind, Decision: d.Verdict.String(), Reason: d.Why(), Context: ctx}
}

// scriptLines is every command found in a script, one line each: where
// it is, its verdict, its rule ("-" for none) and its command line as
// shell (termtext.Argv).
func scriptLines(s *decision.Script) string {
	lines := make([]string, len(s.Commands))
	for i, c := range s.Commands {
		lines[i] = fmt.Sprintf("%s %s %s: %s", c.Pos, c.Verdict, orDash(c.Rule), termtext.Argv(append([]string{c.Command}, c.Args...)))
	}
	return strings.Join(lines, "\n")
}
