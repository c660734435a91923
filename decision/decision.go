// Package decision defines the verdict that every airlock gate returns.
//
// The zero value of a Decision is a denial: a gate that forgets to decide
// refuses. Every decision a gate returns carries the gate that took it, a
// fixed reason naming what was decided and why, and the matched rule.
package decision

import (
	"encoding/json"
	"fmt"
)

// Verdict is the outcome of a gate. Its zero value is Deny.
type Verdict uint8

// The verdicts. Deny is the zero value on purpose.
const (
	Deny Verdict = iota
	Allow
	Escalate
)

var verdictNames = [...]string{Deny: "deny", Allow: "allow", Escalate: "escalate"}

// String returns "deny", "allow" or "escalate".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// MarshalText encodes the verdict as its name.
func (v Verdict) MarshalText() ([]byte, error) {
	if int(v) >= len(verdictNames) {
		return nil, fmt.Errorf("invalid verdict %d", uint8(v))
	}
	return []byte(verdictNames[v]), nil
}

// UnmarshalText decodes a verdict name.
func (v *Verdict) UnmarshalText(b []byte) error {
	for i, n := range verdictNames {
		if n == string(b) {
			*v = Verdict(i)
			return nil
		}
	}
	return fmt.Errorf("unknown verdict %q (want deny, allow or escalate)", b)
}

// Rank orders verdicts by what they let happen: deny 0, escalate 1,
// allow 2.
func (v Verdict) Rank() int {
	switch v {
	case Allow:
		return 2
	case Escalate:
		return 1
	}
	return 0
}

// Gate names the control that took a decision.
type Gate string

// The gates and controls that take decisions.
const (
	GateCommand  Gate = "command"
	GateEgress   Gate = "egress"
	GateResource Gate = "resource"
	GateSandbox  Gate = "sandbox"
)

// NoReason is the reason reported for a Decision that no gate filled in.
const NoReason = "no gate decided: deny by default"

// Decision is what a gate decided, and why.
type Decision struct {
	Gate    Gate    `json:"gate"`
	Verdict Verdict `json:"decision"`
	// Reason is a fixed sentence per decision path, naming the subject
	// (tool and command, or task and host) and the rule.
	Reason string `json:"reason"`
	// Rule is the name of the matched rule, or "" when none matched.
	Rule string `json:"rule"`
	// Justification is the matched rule's justification text from the
	// policy, "" when it has none.
	Justification string `json:"justification,omitempty"`
	// Script is set on a command decision taken on a shell's script,
	// command by command (a "shell": true rule): the shell, and every
	// command found in the script.
	Script *Script `json:"script,omitempty"`
}

// Script is what a command gate found in a shell's script (-c SCRIPT).
type Script struct {
	// Shell is the dialect the script was read in and runs in: "sh",
	// "bash" or "dash".
	Shell string `json:"shell" jsonschema:"required,enum=sh,enum=bash,enum=dash"`
	// Commands lists every simple command of the script, in the order
	// written, each decided on its own, and every construct refused.
	Commands []ScriptCommand `json:"commands" jsonschema:"required"`
}

// ScriptCommand is one command of a script, or one construct refused.
type ScriptCommand struct {
	// Pos is where it starts in the script, "line:col" (1-based, in
	// bytes); a nested shell's script adds its own after a '/'.
	Pos string `json:"pos" jsonschema:"required"`
	// Command is the command's name as written, or the construct refused
	// ("$(...)", "eval").
	Command string `json:"command" jsonschema:"required"`
	// Args are its arguments: each one's value, or as written when it
	// holds an expansion.
	Args []string `json:"args" jsonschema:"required"`
	// Verdict, Rule and Reason are its own decision.
	Verdict Verdict `json:"decision" jsonschema:"required,type=string,enum=allow,enum=deny,enum=escalate"`
	Rule    string  `json:"rule" jsonschema:"required"`
	Reason  string  `json:"reason" jsonschema:"required"`
}

// Allowed reports whether the verdict is Allow.
func (d Decision) Allowed() bool { return d.Verdict == Allow }

// Why returns the reason, or NoReason for a decision nobody filled in.
func (d Decision) Why() string {
	if d.Reason == "" {
		return NoReason
	}
	return d.Reason
}

// String renders the decision as "gate: verdict: reason".
func (d Decision) String() string {
	return fmt.Sprintf("%s: %s: %s", d.Gate, d.Verdict, d.Why())
}

// MarshalJSON encodes the decision; an empty reason is written as NoReason
// so that a printed decision never has an empty reason.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision
	p := plain(d)
	p.Reason = d.Why()
	return json.Marshal(p)
}
