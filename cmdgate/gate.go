// Package cmdgate is airlock's command gate: per-tool allowlists of
// command and argument signatures, compiled once into an index.
//
// A decision looks at deny rules, then escalate rules, then allow rules,
// and denies by default. A tool without a scope is denied, and a command
// outside the tool's scope is denied even when another tool allows it.
// Bare command names are matched by name, never by what is installed; a
// request naming a path (a relative one taken from its working
// directory) matches only a rule naming that same absolute path, or, for
// a workspace program in /workspace or /tmp, a glob of it, which the
// sandbox's init resolves inside (Program). A shell rule decides each
// command of a -c script (shell.go). Every decision carries a fixed
// reason naming the tool, the command and the rule.
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
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/policy"
)

// Gate is a compiled command policy. It is immutable and safe for
// concurrent use.
type Gate struct {
	tools map[string]*scope
	names []string // the tools, sorted: the "did you mean" of an unknown one
}

// scope is one tool's rules, indexed by command.
type scope struct {
	commands map[string]*entry
	globs    []glob   // rules naming workspace programs by a glob, in policy order
	names    string   // the allowlisted commands, for reasons
	writable []string // where a script may redirect to: the sandbox's trees and readWrite
}

// glob is the rules of one glob command ("/workspace/.venv/bin/*").
type glob struct {
	pattern string
	e       *entry
}

// entry holds the rules for one command of one tool, by kind (of
// ruleKinds), and the signatures its allow rules accept (for refusals).
type entry struct {
	rules      [len(ruleKinds)][]rule
	signatures []Signature
}

// ruleKinds are the verdicts of an entry's rules, in the order the kinds
// are tried.
var ruleKinds = [...]decision.Verdict{decision.Deny, decision.Escalate, decision.Allow}

// allowRules is the kind of the allow rules.
const allowRules = 2

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
	shell      *shellRule
	glob       bool // its command is a glob: a decision names the request's command
}

// decision is r's decision on command; a glob rule's names the command
// asked for, which its prepared decision cannot.
func (r *rule) decision(tool, command string) decision.Decision {
	d := r.decided
	if r.glob {
		d.Reason = ruleReason(d.Verdict, tool, command, d.Rule)
	}
	return d
}

// Compile builds the gate's index from a validated policy.
func Compile(p *policy.Policy) *Gate {
	g := &Gate{tools: make(map[string]*scope, len(p.ToolScopes))}
	for tool, ts := range p.ToolScopes {
		s := &scope{commands: map[string]*entry{}, writable: writableTrees(p.FilesystemFor(tool))}
		for kind, list := range [len(ruleKinds)][]policy.CommandPattern{ts.Deny, ts.Escalate, ts.Allow} {
			v := ruleKinds[kind]
			for _, cp := range list {
				e := s.entryFor(cp.Command)
				r := rule{sigs: cp.ArgPatterns, extra: cp.AllowExtraArgs, paths: v != decision.Allow, isEmptySig: len(cp.ArgPatterns) == 0,
					decided: decision.Decision{Gate: decision.GateCommand, Verdict: v, Rule: cp.Name,
						Reason: ruleReason(v, tool, cp.Command, cp.Name), Justification: cp.Justification}}
				if cp.Shell {
					r.shell = newShellRule(cp, tool, s)
				}
				r.glob = policy.IsGlob(cp.Command)
				e.rules[kind] = append(e.rules[kind], r)
				if kind == allowRules {
					e.signatures = append(e.signatures, signaturesOf(cp)...)
				}
			}
		}
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
	g.names = slices.Sorted(maps.Keys(g.tools))
	return g
}

// entryFor returns the entry of a rule's command, made on first use.
func (s *scope) entryFor(command string) *entry {
	if policy.IsGlob(command) {
		for _, g := range s.globs {
			if g.pattern == command {
				return g.e
			}
		}
		s.globs = append(s.globs, glob{command, &entry{}})
		return s.globs[len(s.globs)-1].e
	}
	e := s.commands[command]
	if e == nil {
		e = &entry{}
		s.commands[command] = e
	}
	return e
}

// signaturesOf lists what one allow rule accepts.
func signaturesOf(cp policy.CommandPattern) []Signature {
	if cp.Shell {
		return []Signature{{Rule: cp.Name, Command: cp.Command, Args: []string{"-c"}, ExtraArgs: true}}
	}
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
	reasonNoScopeOf = "no scope for tool %q: deny by default (did you mean %q?)"
	reasonNotListed = "%q is not in the allowlist of tool %q (allowlist: %s): deny by default"
	reasonNoSig     = "%q is in the allowlist of tool %q but its arguments match no signature: deny by default"
	reasonRelative  = "%q names a relative path that is not clean (a '.' or '..' inside, '//', a trailing '/'): the kernel resolves '..' through links, the gate lexically; name it as %q: deny"
	reasonUnclean   = "%q is not a clean absolute path; name it as %q: deny"
	reasonNotNamed  = "%q is %s from the working directory, which is not in the allowlist of tool %q (allowlist: %s): deny by default"
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
		if near := strict.Closest(tool, g.names); near != "" {
			return deny(reasonNoScopeOf, tool, near)
		}
		return deny(reasonNoScope, tool)
	}
	if hasNUL(command, args) {
		return deny(reasonNUL, tool)
	}
	if !path.IsAbs(dir) || path.Clean(dir) != dir || strings.IndexByte(dir, 0) >= 0 {
		return deny(reasonDir, dir)
	}
	key, refused := commandKey(command, dir)
	if refused != "" {
		return deny(refused, command, key)
	}
	var buf [1]*entry
	entries := s.lookup(key, buf[:0])
	if len(entries) == 0 {
		return refuseUnlisted(s, tool, command, key)
	}
	for kind := range ruleKinds {
		for _, e := range entries {
			if d, ok := decideRules(e.rules[kind], tool, command, args, dir); ok {
				return d
			}
		}
	}
	return refuseUnmatched(s, tool, command, key, entries)
}

// decideRules returns the decision of the first rule of list that matches
// args: a shell rule's is its script's (shell.go).
func decideRules(list []rule, tool, command string, args []string, dir string) (decision.Decision, bool) {
	for i := range list {
		r := &list[i]
		if r.shell != nil {
			if d, ok := r.shell.decide(tool, command, args, []string{dir}, 0); ok {
				return d, true
			}
			continue
		}
		if r.matches(args, dir) {
			return r.decision(tool, command), true
		}
	}
	return decision.Decision{}, false
}

// commandKey is the name a request's command is looked up by: a bare name
// as it is, a path as a clean absolute path, a relative one taken from
// dir. A path that is not clean is refused with its reason, and its clean
// form as key, which the reason names: the gate reads ".." lexically.
func commandKey(command, dir string) (key, refused string) {
	switch {
	case command == "" || !strings.Contains(command, "/"):
		return command, ""
	case path.IsAbs(command) && path.Clean(command) != command:
		return path.Clean(command), reasonUnclean
	case path.IsAbs(command):
		return command, ""
	}
	rel := strings.TrimPrefix(command, "./")
	if rel == "" || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return path.Join(dir, rel), reasonRelative
	}
	return path.Join(dir, rel), ""
}

// lookup appends to buf the entry naming key, then those of the globs
// that match it (only a workspace program's path can match a glob).
func (s *scope) lookup(key string, buf []*entry) []*entry {
	if e := s.commands[key]; e != nil {
		buf = append(buf, e)
	}
	if len(s.globs) == 0 || policy.ProgramTree(key) == "" {
		return buf
	}
	for _, g := range s.globs {
		if ok, _ := path.Match(g.pattern, key); ok {
			buf = append(buf, g.e)
		}
	}
	return buf
}

// refuseUnlisted picks the most specific reason for a command that no rule
// of the tool names.
func refuseUnlisted(s *scope, tool, command, key string) decision.Decision {
	switch {
	case command == "":
		return deny(reasonEmpty, tool)
	case key != command:
		return deny(reasonNotNamed, command, key, tool, s.names)
	}
	return deny(reasonNotListed, command, tool, s.names)
}

// refuseUnmatched is the refusal of a command that the rules of entries
// name, none of which matched its arguments.
func refuseUnmatched(s *scope, tool, command, key string, entries []*entry) decision.Decision {
	allowed := false
	for _, e := range entries {
		for _, r := range e.rules[allowRules] {
			if r.shell != nil {
				return deny(reasonShellForm, command, tool, r.decided.Rule)
			}
			allowed = true
		}
	}
	if !allowed {
		return refuseUnlisted(s, tool, command, key)
	}
	return deny(reasonNoSig, command, tool)
}

func hasNUL(command string, args []string) bool {
	nul := func(s string) bool { return strings.IndexByte(s, 0) >= 0 }
	return nul(command) || slices.ContainsFunc(args, nul)
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
	return r.matchesBy(len(args), func(i int, a string) bool { return args[i] == a || r.paths && samePath(args[i], a, dir) })
}

// matchesBy is the signature semantics of matches over n arguments, eq
// comparing the i-th with a signature's element a.
func (r *rule) matchesBy(n int, eq func(i int, a string) bool) bool {
	if r.isEmptySig {
		return r.extra || n == 0
	}
	for _, sig := range r.sigs {
		if n < len(sig) || !r.extra && n != len(sig) {
			continue
		}
		ok := true
		for i, a := range sig {
			if !eq(i, a) {
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
