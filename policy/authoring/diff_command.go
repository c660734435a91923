package authoring

import (
	"fmt"
	"slices"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// sig is a signature as the command gate matches it: the arguments must
// equal args, or start with them when extra.
type sig struct {
	args  []string
	extra bool
}

// sigsOf lists the signatures of rules of command; a shell rule's is a
// script of one builtin, which it allows.
func sigsOf(rules []policy.CommandPattern, command string) []sig {
	var out []sig
	for _, r := range rules {
		if r.Command != command {
			continue
		}
		if r.Shell {
			out = append(out, sig{args: []string{"-c", "true"}})
			continue
		}
		if len(r.ArgPatterns) == 0 {
			out = append(out, sig{args: []string{}, extra: r.AllowExtraArgs})
		}
		for _, a := range r.ArgPatterns {
			out = append(out, sig{args: a, extra: r.AllowExtraArgs})
		}
	}
	return out
}

func allRules(ts policy.ToolScope) []policy.CommandPattern {
	return slices.Concat(ts.Deny, ts.Escalate, ts.Allow)
}

// diffCommands finds the command lines b lets run (or escalates) that a
// refuses (or escalates). The command lines that tell two sets of rules
// apart are each signature of either, exactly, and followed by an
// argument no signature names, and those of no argument and of that
// argument alone: every other command line matches the same rules as one
// of these.
func diffCommands(c *changes, a, b *policy.Policy, da, db *decider) {
	for _, tool := range sortedKeys(b.ToolScopes) {
		tsa, hadScope := a.ToolScopes[tool]
		tsb := b.ToolScopes[tool]
		var commands []string
		for _, r := range slices.Concat(allRules(tsa), allRules(tsb)) {
			if !slices.Contains(commands, r.Command) {
				commands = append(commands, r.Command)
			}
		}
		for _, command := range commands {
			sigs := slices.Concat(sigsOf(allRules(tsa), command), sigsOf(allRules(tsb), command))
			fresh := freshArg(sigs)
			probes := [][]string{{}, {fresh}}
			for _, s := range sigs {
				probes = append(probes, s.args)
				if s.extra {
					probes = append(probes, append(slices.Clone(s.args), fresh))
				}
			}
			for _, p := range probeDirs(probes) {
				args, argv := p.args, append([]string{command}, p.args...)
				oa, ob := da.commandIn(tool, argv, p.dir), db.commandIn(tool, argv, p.dir)
				if ob.Verdict.Rank() <= oa.Verdict.Rank() {
					continue
				}
				if !hadScope {
					c.add(KindNewTool, "tool "+tool, "", "%s has no scope for the tool", c.a)
				}
				probe := termtext.Argv(argv)
				if len(args) > 0 && args[len(args)-1] == fresh {
					probe = termtext.Argv(argv[:len(argv)-1]) + " ..."
				}
				r := ruleNamed(tsb, ob.Rule)
				what := func(shown, more string) string {
					s := "rule " + quote(ob.Rule) + " " + ob.Verdict.String() + "s " + shown
					if more != "" {
						s += " (" + more + ")"
					}
					return s
				}
				sig := shownSig(r, args)
				key := command + "\x00" + ob.Rule
				switch {
				case shellRule(r):
					c.add(KindShellRule, "tool "+tool, key, "%s", what(sig, "a shell given a script with -c"))
				case workspaceProgram(b, tool, command):
					c.add(KindWorkspaceProgram, "tool "+tool, key, "%s", what(sig, "a program under a tree the sandbox writes"))
				case !namedBy(tsa, command):
					c.add(KindNewCommand, "tool "+tool, key, "%s", what(sig, ""))
				case oa.Verdict == decision.Deny && oa.Rule != "":
					c.add(KindDenyDropped, "tool "+tool, key+"\x00"+oa.Rule, "%s", what(probe, c.a+"'s deny rule "+quote(oa.Rule)+" refuses it"))
				case oa.Verdict == decision.Escalate:
					c.add(KindEscalationDropped, "tool "+tool, key+"\x00"+oa.Rule, "%s", what(probe, c.a+"'s rule "+quote(oa.Rule)+" escalates it"))
				default:
					c.add(KindWiderSignature, "tool "+tool, key, "%s", what(sig, widerHow(sigsOf(tsa.Allow, command), r, args, c.a)))
				}
			}
		}
	}
}

// probeDir is a command line's arguments and the directory it is decided
// in.
type probeDir struct {
	args []string
	dir  string
}

// probeDirs is each of probes in the workspace and in a directory no
// rule names: deny and escalate rules compare arguments as paths from
// the working directory, so a rule that names a path one way and one
// that names it another can differ only away from the workspace.
func probeDirs(probes [][]string) []probeDir {
	var out []probeDir
	for _, dir := range []string{workspace, "/" + probeLabel} {
		for _, args := range probes {
			out = append(out, probeDir{args, dir})
		}
	}
	return out
}

// namedBy reports whether a rule of ts that can let a command run (allow
// or escalate) names command.
func namedBy(ts policy.ToolScope, command string) bool {
	return slices.ContainsFunc(slices.Concat(ts.Allow, ts.Escalate), func(r policy.CommandPattern) bool { return r.Command == command })
}

func ruleNamed(ts policy.ToolScope, name string) policy.CommandPattern {
	for _, r := range allRules(ts) {
		if r.Name == name {
			return r
		}
	}
	return policy.CommandPattern{}
}

// matchedSig is the signature of rule r that the arguments args match.
func matchedSig(r policy.CommandPattern, args []string) (sig, bool) {
	for _, s := range sigsOf([]policy.CommandPattern{r}, r.Command) {
		if len(args) >= len(s.args) && slices.Equal(args[:len(s.args)], s.args) && (s.extra || len(args) == len(s.args)) {
			return s, true
		}
	}
	return sig{}, false
}

// shownSig shows the signature of rule r that args match: the command
// line, and " ..." when more arguments may follow.
func shownSig(r policy.CommandPattern, args []string) string {
	s, _ := matchedSig(r, args)
	shown := termtext.Argv(append([]string{r.Command}, s.args...))
	if s.extra {
		shown += " ..."
	}
	return shown
}

// widerHow says how rule r is wider than the allow signatures old of
// the policy named a, for the same command, on the command line args.
func widerHow(old []sig, r policy.CommandPattern, args []string, a string) string {
	s, _ := matchedSig(r, args)
	if s.extra {
		for _, o := range old {
			switch {
			case slices.Equal(o.args, s.args) && !o.extra:
				return "allowExtraArgs on a signature " + a + " matches exactly"
			case o.extra && len(o.args) > len(s.args) && slices.Equal(o.args[:len(s.args)], s.args):
				return "a shorter prefix than " + a + "'s " + termtext.Argv(append([]string{r.Command}, o.args...)) + " ..."
			}
		}
		return "any arguments after it, where " + a + " allows fewer command lines"
	}
	return "a signature " + a + " does not have"
}

// freshArg is an argument no signature names.
func freshArg(sigs []sig) string {
	arg := "airlock-diff-probe"
	for n := 2; slices.ContainsFunc(sigs, func(s sig) bool { return slices.Contains(s.args, arg) }); n++ {
		arg = fmt.Sprintf("airlock-diff-probe-%d", n)
	}
	return arg
}
