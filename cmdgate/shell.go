package cmdgate

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// Shell rules ("shell": true) decide a shell's -c SCRIPT command by
// command. Threat model: the agent writes the script, the arguments
// around it and the workspace; airlock decides before anything runs, so
// the decision is on the script as the shell will read it (its own
// dialect, parsed by mvdan.cc/sh), and only what can be known from the
// text alone is accepted: literal command names and words, quoting,
// sequences, && and ||, pipelines, subshells and blocks, if, case, for
// and while, cd (followed lexically), plain assignments and redirections
// into the writable trees. Whatever the shell would decide only as it
// runs — a command or process substitution, eval, source, a variable or
// glob in command position, a function, an alias, a trap — is refused
// (or escalated, by shellUnknown), naming the construct and where it is.
// What runs is exactly the decided text, in a shell whose environment
// cannot change what it runs (ShellEnv): docs/policy.md, "Shell rules".

// Bounds on a script, so a decision's cost and record stay small.
const (
	maxScript = 64 << 10 // bytes of one script
	maxFound  = 256      // commands and refusals found in one script
	maxDepth  = 3        // shells inside shells
	maxDirs   = 64       // working directories one command may run in
)

// The reasons of a shell rule's decision.
const (
	reasonScriptAllow   = "%q matched shell rule %q of tool %q: each of the %d commands of its script is allowed"
	reasonScriptRefused = "%q matched shell rule %q of tool %q; in its script, %s at %s: %s"
	reasonShellForm     = "%q is in the allowlist of tool %q by shell rule %q, which accepts only -c SCRIPT (options -e, -u, -x, -v, -l, -o NAME before it): deny"
)

// shellRule is a compiled "shell": true rule.
type shellRule struct {
	s             *scope // its tool's rules, which decide each command
	tool, name    string
	dialect       string           // "sh", "bash" or "dash"
	unknown       decision.Verdict // what a construct that cannot be known gets
	justification string
}

func newShellRule(cp policy.CommandPattern, tool string, s *scope) *shellRule {
	r := &shellRule{s: s, tool: tool, name: cp.Name, dialect: policy.ShellOf(cp.Command), justification: cp.Justification}
	if cp.ShellUnknown == "escalate" {
		r.unknown = decision.Escalate
	}
	return r
}

// invocation is a shell's arguments in the one form a shell rule
// accepts: options, -c, then the script and its $0, $1, ...
type invocation struct {
	script string
	login  bool
}

// shellOptions are the long names -o and +o may set.
var shellOptions = map[string]bool{"errexit": true, "nounset": true, "pipefail": true, "xtrace": true, "verbose": true, "noglob": true, "noclobber": true}

// parseInvocation reads args as [options] -c SCRIPT [NAME [ARG...]]: each
// option a cluster of e, u, x, v, l and c after '-' (of e, u, x, v after
// '+'), or -o/+o NAME; c given once. It reports false for anything else
// (a script file, -i, -s, a long option).
func parseInvocation(args []string) (invocation, bool) {
	var inv invocation
	seenC := false
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "-o" || a == "+o" {
			if i+1 >= len(args) || !shellOptions[args[i+1]] {
				return inv, false
			}
			i++
			continue
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			break
		}
		letters := "euxvlc"
		if a[0] == '+' {
			letters = "euxv"
		}
		for _, c := range a[1:] {
			switch {
			case !strings.ContainsRune(letters, c):
				return inv, false
			case c == 'c' && seenC:
				return inv, false
			case c == 'c':
				seenC = true
			case c == 'l':
				inv.login = true
			}
		}
	}
	if !seenC || i >= len(args) {
		return inv, false
	}
	inv.script = args[i]
	return inv, true
}

// decide is the rule's decision on a shell run with args, in any of dirs
// (one for a request, several for a shell inside a script), inside depth
// other shells; false when args are not -c SCRIPT.
func (sr *shellRule) decide(tool, command string, args []string, dirs []string, depth int) (decision.Decision, bool) {
	inv, ok := parseInvocation(args)
	if !ok {
		return decision.Decision{}, false
	}
	w := &walker{sr: sr, depth: depth}
	at := syntax.NewPos(0, 1, 1)
	switch {
	case depth > maxDepth:
		w.exceed(at, "a shell", fmt.Sprintf("more than %d shells inside one another", maxDepth))
	case len(inv.script) > maxScript:
		w.exceed(at, "the script", fmt.Sprintf("it is longer than %d bytes", maxScript))
	case inv.login && (sr.dialect != "bash" || depth > 0):
		w.refuse(at, "-l", "a login shell first runs /etc/profile and ~/.profile, code the agent can write; "+
			"send -c (airlock runs a top-level bash -l with --noprofile)")
	default:
		w.script(inv.script, dirs)
	}
	return w.decision(command), true
}

// decision is the script's decision: allowed when every command found is,
// else the first refusal of the gravest kind, with its rule.
func (w *walker) decision(command string) decision.Decision {
	sr := w.sr
	found, why := w.sorted()
	d := decision.Decision{Gate: decision.GateCommand, Verdict: decision.Allow, Rule: sr.name, Justification: sr.justification,
		Script: &decision.Script{Shell: sr.dialect, Commands: found}}
	worst := -1 // the gravest: deny over escalate
	for i, c := range found {
		if c.Verdict != decision.Allow && (worst < 0 || c.Verdict.Rank() < found[worst].Verdict.Rank()) {
			worst = i
		}
	}
	if worst < 0 {
		d.Reason = fmt.Sprintf(reasonScriptAllow, command, sr.name, sr.tool, len(found))
		return d
	}
	c := found[worst]
	d.Verdict, d.Rule, d.Justification = c.Verdict, c.Rule, why[worst]
	d.Reason = fmt.Sprintf(reasonScriptRefused, command, sr.name, sr.tool, c.Command, c.Pos, c.Reason)
	return d
}
