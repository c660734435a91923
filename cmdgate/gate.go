// Package cmdgate is airlock's command gate: per-tool allowlists of
// command and argument signatures, compiled once into an index.
//
// A decision looks at deny rules, then escalate rules, then allow rules,
// and denies by default. A tool without a scope is denied, and a command
// outside the tool's scope is denied even when another tool allows it.
// Bare command names are matched by name, never by what is installed; a
// request naming a path matches only a rule naming that same absolute
// path. Every decision carries a fixed reason naming the tool, the command
// and the rule.
//
// Threat model: the agent chooses the tool, the command, its arguments
// and the working directory; the operator writes the policy. A deny or
// escalate rule must not be passed by writing the same file another way,
// so their arguments are also compared as paths, lexically, from the
// step's working directory (".env", "./.env", "/workspace/.env" and
// "sub/../.env" are one file). Allow rules compare arguments exactly as
// written: "./requests" is not "requests" to pip. What no lexical
// comparison sees — a link the agent made, another position, an option
// with its value attached, another program reading the file — is said in
// docs/policy.md ("Arguments and paths"): a deny rule refuses requests,
// the sandbox's file system view is what keeps files away.
package cmdgate

import (
	"fmt"
	"path"
	"strings"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// Gate is a compiled command policy. It is immutable and safe for
// concurrent use.
type Gate struct {
	tools map[string]*scope
}

// scope is one tool's rules, indexed by command.
type scope struct {
	commands map[string]*entry
	names    string // the allowlisted commands, for reasons
}

// entry holds the rules for one command of one tool, by kind, and the
// signatures its allow rules accept (for refusals).
type entry struct {
	deny, escalate, allow []rule
	signatures            []Signature
}

// Signature is one argument signature that an allow rule accepts: the
// arguments must start with Args, and equal them unless ExtraArgs.
type Signature struct {
	// Rule is the allow rule's name; Command its command.
	Rule    string `json:"rule" jsonschema:"required"`
	Command string `json:"command" jsonschema:"required"`
	// Args is the signature; empty with ExtraArgs false means no
	// arguments at all.
	Args []string `json:"args" jsonschema:"required"`
	// ExtraArgs says whether more arguments may follow Args.
	ExtraArgs bool `json:"extraArgs" jsonschema:"required"`
}

// rule is a compiled CommandPattern with its decision prepared, so the
// allow path allocates nothing.
type rule struct {
	sigs       [][]string
	extra      bool
	paths      bool // arguments also match as the same path (deny, escalate)
	decided    decision.Decision
	isEmptySig bool // no signatures: any args when extra, none otherwise
}

// Compile builds the gate's index from a validated policy.
func Compile(p *policy.Policy) *Gate {
	g := &Gate{tools: make(map[string]*scope, len(p.ToolScopes))}
	for tool, ts := range p.ToolScopes {
		s := &scope{commands: map[string]*entry{}}
		add := func(v decision.Verdict, list []policy.CommandPattern) {
			for _, cp := range list {
				e := s.commands[cp.Command]
				if e == nil {
					e = &entry{}
					s.commands[cp.Command] = e
				}
				r := rule{sigs: cp.ArgPatterns, extra: cp.AllowExtraArgs, paths: v != decision.Allow, isEmptySig: len(cp.ArgPatterns) == 0,
					decided: decision.Decision{Gate: decision.GateCommand, Verdict: v, Rule: cp.Name,
						Reason: ruleReason(v, tool, cp.Command, cp.Name), Justification: cp.Justification}}
				switch v {
				case decision.Deny:
					e.deny = append(e.deny, r)
				case decision.Escalate:
					e.escalate = append(e.escalate, r)
				default:
					e.allow = append(e.allow, r)
					e.signatures = append(e.signatures, signaturesOf(cp)...)
				}
			}
		}
		add(decision.Deny, ts.Deny)
		add(decision.Escalate, ts.Escalate)
		add(decision.Allow, ts.Allow)
		var names []string
		seen := map[string]bool{}
		for _, cp := range ts.Allow {
			if !seen[cp.Command] {
				seen[cp.Command] = true
				names = append(names, cp.Command)
			}
		}
		s.names = "[" + strings.Join(names, ", ") + "]"
		g.tools[tool] = s
	}
	return g
}

// signaturesOf lists what one allow rule accepts.
func signaturesOf(cp policy.CommandPattern) []Signature {
	if len(cp.ArgPatterns) == 0 {
		return []Signature{{Rule: cp.Name, Command: cp.Command, Args: []string{}, ExtraArgs: cp.AllowExtraArgs}}
	}
	out := make([]Signature, len(cp.ArgPatterns))
	for i, sig := range cp.ArgPatterns {
		out[i] = Signature{Rule: cp.Name, Command: cp.Command, Args: append([]string{}, sig...), ExtraArgs: cp.AllowExtraArgs}
	}
	return out
}

// Signatures lists the argument signatures that tool's allow rules accept
// for command, in policy order; nil when it has none. A refusal shows
// them, so that an agent refused on its arguments is told what would
// pass instead of guessing. The result is shared: do not modify it.
func (g *Gate) Signatures(tool, command string) []Signature {
	if s := g.tools[tool]; s != nil {
		if e := s.commands[command]; e != nil {
			return e.signatures
		}
	}
	return nil
}

// The fixed reasons, one per decision path.
const (
	reasonNoScope   = "no scope for tool %q: deny by default"
	reasonNotListed = "%q is not in the allowlist of tool %q (allowlist: %s): deny by default"
	reasonNoSig     = "%q is in the allowlist of tool %q but its arguments match no signature: deny by default"
	reasonRelative  = "%q names a relative path: only a rule naming the same absolute path can match, and rules name absolute paths: deny"
	reasonUnclean   = "%q is not a clean absolute path: deny"
	reasonNUL       = "the command or an argument for tool %q has a NUL byte, which no program can receive: deny"
	reasonDir       = "the working directory %q is not a clean absolute path, or has a NUL byte: deny"
	reasonEmpty     = "empty command for tool %q: deny"
	reasonAllowRule = "%q matched allow rule %q of tool %q"
	reasonEscalate  = "%q matched escalate rule %q of tool %q: needs human approval"
	reasonDenyRule  = "%q matched deny rule %q of tool %q"
)

func ruleReason(v decision.Verdict, tool, command, name string) string {
	switch v {
	case decision.Allow:
		return fmt.Sprintf(reasonAllowRule, command, name, tool)
	case decision.Escalate:
		return fmt.Sprintf(reasonEscalate, command, name, tool)
	}
	return fmt.Sprintf(reasonDenyRule, command, name, tool)
}

// Decide is the gate's decision on tool running command with args in
// dir, the working directory inside the sandbox (a clean absolute path,
// as enforcer.StepDir gives it). Deny and escalate rules compare each
// argument with their own as a path from dir too (see the package doc).
func (g *Gate) Decide(tool, command string, args []string, dir string) decision.Decision {
	s := g.tools[tool]
	if s == nil {
		return deny(reasonNoScope, tool)
	}
	if hasNUL(command, args) {
		return deny(reasonNUL, tool)
	}
	if !path.IsAbs(dir) || path.Clean(dir) != dir || strings.IndexByte(dir, 0) >= 0 {
		return deny(reasonDir, dir)
	}
	e := s.commands[command]
	if e == nil {
		return refuseUnlisted(s, tool, command)
	}
	for _, list := range [...][]rule{e.deny, e.escalate, e.allow} {
		for i := range list {
			if list[i].matches(args, dir) {
				return list[i].decided
			}
		}
	}
	if len(e.allow) == 0 {
		return deny(reasonNotListed, command, tool, s.names)
	}
	return deny(reasonNoSig, command, tool)
}

// refuseUnlisted picks the most specific reason for a command that no rule
// of the tool names.
func refuseUnlisted(s *scope, tool, command string) decision.Decision {
	switch {
	case command == "":
		return deny(reasonEmpty, tool)
	case strings.Contains(command, "/") && !path.IsAbs(command):
		return deny(reasonRelative, command)
	case strings.Contains(command, "/") && path.Clean(command) != command:
		return deny(reasonUnclean, command)
	}
	return deny(reasonNotListed, command, tool, s.names)
}

func hasNUL(command string, args []string) bool {
	if strings.IndexByte(command, 0) >= 0 {
		return true
	}
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return true
		}
	}
	return false
}

func deny(format string, a ...any) decision.Decision {
	return decision.Decision{Gate: decision.GateCommand, Verdict: decision.Deny, Reason: fmt.Sprintf(format, a...)}
}

// matches implements the seed's signature semantics: args must start with
// a signature, and equal it exactly unless extra arguments are allowed;
// with no signatures, any args when extra is allowed, none otherwise. An
// argument equals a signature's element when it is the same string, or,
// for a rule that compares paths, names the same path from dir.
func (r *rule) matches(args []string, dir string) bool {
	if r.isEmptySig {
		return r.extra || len(args) == 0
	}
	for _, sig := range r.sigs {
		if len(args) < len(sig) || !r.extra && len(args) != len(sig) {
			continue
		}
		ok := true
		for i, a := range sig {
			if args[i] != a && !(r.paths && samePath(args[i], a, dir)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// samePath reports whether arg and elem name the same path from dir,
// lexically: "." and ".." taken out, "//" collapsed, a relative one taken
// from dir. A NAME=VALUE pair (--file=.env, if=/dev/sda) is the same when
// its NAME is and its VALUE names the same path. The empty string names
// no path.
func samePath(arg, elem, dir string) bool {
	if arg != "" && elem != "" && inDir(arg, dir) == inDir(elem, dir) {
		return true
	}
	name, v, ok := strings.Cut(elem, "=")
	n := len(name) + 1 // NAME and its '='
	if !ok || name == "" || v == "" || len(arg) <= n || arg[:n] != elem[:n] {
		return false
	}
	return inDir(arg[n:], dir) == inDir(v, dir)
}

// inDir is p as an absolute clean path, taken from dir when relative.
func inDir(p, dir string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}
