package authoring

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// maxSignatures bounds the command lines one suggested rule lists.
const maxSignatures = 64

// minShared is how many refused command lines must share a prefix for
// Suggest to propose the prefix instead of each.
const minShared = 3

type commandKey struct{ tool, command string }

type commandRefusal struct {
	args []string
	dir  string // the working directory it was decided in
	rec  Record
}

// readCommand reads a command gate's refusal or escalation.
func (s *suggester) readCommand(ev audit.Event) {
	c := ev.Context
	rec := recordOf(ev)
	argv := append([]string{c.Command}, c.Args...)
	subject := fmt.Sprintf("tool %s: %s", quote(c.Tool), termtext.Argv(argv))
	if ev.Decision == audit.DecisionEscalate {
		s.leave(subject, "escalated by rule "+quote(c.Rule)+": approve it (airlock approve), or move that rule to allow by hand", rec)
		return
	}
	why := ""
	switch {
	case c.Truncated || len(c.Tails) > 0:
		why = `the record shortened the command line (docs/audit.md, "Long fields"), so it is not known exactly`
	case c.Command == "":
		why = "the record names no command"
	case !strict.Name(c.Tool):
		why = "the tool's name is not one a policy can have"
	case !readable(c.Command) || slices.ContainsFunc(c.Args, func(a string) bool { return !readable(a) || strings.IndexByte(a, 0) >= 0 }):
		why = "it holds control or invisible characters, or bytes that are not UTF-8: a person could not review it as it is (write the rule by hand if it is meant)"
	case strings.ContainsAny(c.Command, " \t"):
		why = "the command has white space: a rule names one program"
	case strings.Contains(c.Command, "/") && (!path.IsAbs(c.Command) || path.Clean(c.Command) != c.Command):
		why = "it names a relative or unclean path: a path matches only a rule naming the same absolute path, so run it by its absolute path (/workspace/...)"
	}
	if why != "" {
		s.leave(subject, why, rec)
		return
	}
	dir := enforcer.StepDir(c.Details["cwd"])
	switch d := s.d.commandIn(c.Tool, argv, dir); {
	case d.Allowed():
		s.leave(subject, "the policy allows it now (rule "+quote(d.Rule)+")", rec)
	case d.Verdict == decision.Escalate:
		s.leave(subject, "the policy escalates it now (rule "+quote(d.Rule)+"): approve it, or move that rule to allow by hand", rec)
	case d.Rule != "":
		s.leave(subject, "denied by deny rule "+quote(d.Rule)+": suggest never removes a deny rule", rec)
	default:
		s.commands.add(commandKey{c.Tool, c.Command}, commandRefusal{args: append([]string{}, c.Args...), dir: dir, rec: rec})
	}
}

// signature is one distinct command line refused, with its records and
// the working directories it was refused in.
type signature struct {
	args []string
	recs []Record
	dirs []string
}

// commandSuggestions proposes, for each tool and command, one rule of
// the exact command lines refused, and one rule of a common prefix for
// each group of at least minShared command lines with the same first
// argument (not for shells, interpreters or launchers, nor with
// Options.Exact).
func (s *suggester) commandSuggestions() []*Suggestion {
	var out []*Suggestion
	for _, k := range s.commands.keys {
		var sigs []*signature
		seen := map[string]*signature{}
		for _, r := range s.commands.m[k] {
			key := strings.Join(r.args, "\x00") + fmt.Sprint(len(r.args))
			if sg := seen[key]; sg != nil {
				sg.recs = append(sg.recs, r.rec)
				if !slices.Contains(sg.dirs, r.dir) {
					sg.dirs = append(sg.dirs, r.dir)
				}
				continue
			}
			sg := &signature{args: r.args, recs: []Record{r.rec}, dirs: []string{r.dir}}
			seen[key] = sg
			sigs = append(sigs, sg)
		}
		generalise := !s.opts.Exact && !isShell(k.command) && !slices.Contains(interpreters, path.Base(k.command)) &&
			!slices.Contains(launchers, path.Base(k.command))
		var clusters groups[string, *signature] // by first argument
		if generalise {
			for _, sg := range sigs {
				if len(sg.args) > 0 {
					clusters.add(sg.args[0], sg)
				}
			}
		}
		var exact []*signature
		prefixed := map[*signature]bool{}
		for _, first := range clusters.keys {
			if cl := clusters.m[first]; len(cl) >= minShared {
				out = append(out, s.commandSuggestion(k, cl, commonPrefix(cl)))
				for _, sg := range cl {
					prefixed[sg] = true
				}
			}
		}
		for _, sg := range sigs {
			if !prefixed[sg] {
				exact = append(exact, sg)
			}
		}
		if len(exact) > maxSignatures {
			for _, sg := range exact[maxSignatures:] {
				s.leave(fmt.Sprintf("tool %s: %s", quote(k.tool), termtext.Argv(append([]string{k.command}, sg.args...))),
					fmt.Sprintf("more than %d command lines of %s were refused: write a rule for them by hand", maxSignatures, quote(k.command)), sg.recs...)
			}
			exact = exact[:maxSignatures]
		}
		if len(exact) > 0 {
			out = append(out, s.commandSuggestion(k, exact, nil))
		}
	}
	return out
}

// commonPrefix is the longest list of arguments every one of sigs starts
// with.
func commonPrefix(sigs []*signature) []string {
	p := sigs[0].args
	for _, sg := range sigs[1:] {
		n := 0
		for n < len(p) && n < len(sg.args) && p[n] == sg.args[n] {
			n++
		}
		p = p[:n]
	}
	return slices.Clone(p)
}

// commandSuggestion is an allow rule for sigs of k: each exactly, or,
// with a prefix, any command line that starts with it.
func (s *suggester) commandSuggestion(k commandKey, sigs []*signature, prefix []string) *Suggestion {
	var recs Records
	var argvs [][]string
	for _, sg := range sigs {
		recs = append(recs, sg.recs...)
		if len(argvs) < maxListed {
			argvs = append(argvs, append([]string{k.command}, sg.args...))
		}
	}
	sortRecords(recs)
	r := &policy.CommandPattern{Command: k.command, Examples: &policy.CommandExamples{Match: argvs},
		Justification: "suggested by airlock policy suggest from audit records " + recs.String()}
	nameBase := "suggested-" + slug(path.Base(k.command))
	var shown []string
	if prefix != nil {
		r.ArgPatterns, r.AllowExtraArgs = [][]string{prefix}, true
		nameBase += "-" + slug(prefix[0])
		shown = []string{termtext.Argv(append([]string{k.command}, prefix...)) + " ..."}
	} else {
		for _, sg := range sigs {
			r.ArgPatterns = append(r.ArgPatterns, sg.args)
			shown = append(shown, termtext.Argv(append([]string{k.command}, sg.args...)))
		}
		if len(sigs) == 1 && len(sigs[0].args) == 0 {
			r.ArgPatterns = nil // no arguments at all
		}
	}
	c := &Suggestion{Kind: "command", Field: strict.Field("toolScopes", k.tool) + ".allow", Rule: r, Records: recs,
		Summary: fmt.Sprintf("tool %s: allow %s", quote(k.tool), strings.Join(shown, " | "))}
	c.Risks = commandRisks(s.pol.Policy, k.tool, *r)
	if prefix != nil {
		c.Risks = append(c.Risks, fmt.Sprintf("wider than each refusal: any arguments after %s (%d refused command lines start so)",
			termtext.Argv(append([]string{k.command}, prefix...)), len(sigs)))
	}
	if _, ok := s.pol.ToolScopes[k.tool]; !ok {
		c.Risks = append(c.Risks, "a new tool: the policy had no scope for "+quote(k.tool))
	}
	c.apply = func(d *document, cur *policy.Loaded) error {
		r.Name = uniqueName(nameBase, ruleNames(cur.ToolScopes[k.tool]))
		scope, err := d.path("toolScopes", k.tool)
		if err != nil {
			return err
		}
		return appendTo(scope, "allow", r, c)
	}
	for _, sg := range sigs {
		argv := append([]string{k.command}, sg.args...)
		for _, dir := range sg.dirs {
			c.checks = append(c.checks, func(_ *policy.Loaded, d *decider) string {
				if dec := d.commandIn(k.tool, argv, dir); !dec.Allowed() {
					return dec.Why()
				}
				return ""
			})
		}
	}
	return c
}

// ruleNames are the names of a tool's rules.
func ruleNames(ts policy.ToolScope) []string {
	var names []string
	for _, r := range allRules(ts) {
		names = append(names, r.Name)
	}
	return names
}

// uniqueName is name, or name-2, name-3, ..., the first not taken.
func uniqueName(name string, taken []string) string {
	out := name
	for i := 2; slices.Contains(taken, out); i++ {
		out = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

// slug is s reduced to letters, digits, '.', '_' and '-', for a rule's
// name: at most 40 bytes, "x" when nothing is left.
func slug(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			b.WriteRune(r)
		default:
			if !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
		if b.Len() >= 40 {
			break
		}
	}
	out := strings.Trim(b.String(), "-.")
	if out == "" {
		return "x"
	}
	return out
}

// quote is a name the agent may have chosen, quoted and escaped for a
// terminal.
func quote(s string) string { return termtext.Escape(fmt.Sprintf("%q", s)) }
