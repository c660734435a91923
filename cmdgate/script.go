package cmdgate

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// walker decides one script: it walks the statements in the order the
// shell runs them, following the working directory through cd, and
// records every command found with its decision, and every construct it
// refuses.
type walker struct {
	sr    *shellRule
	depth int
	found []decision.ScriptCommand
	why   []string // each found entry's rule's justification
	at    []uint   // each found entry's offset in the script, to sort them by
}

// outcome is where a statement may leave the shell: the working
// directories after it succeeded, and after it failed.
type outcome struct{ ok, fail []string }

func both(dirs []string) outcome { return outcome{dirs, dirs} }

// script parses src in the rule's dialect and walks it from dirs.
func (w *walker) script(src string, dirs []string) {
	lang := syntax.LangPOSIX
	if w.sr.dialect == "bash" {
		lang = syntax.LangBash
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
	if err != nil {
		at, why := syntax.NewPos(0, 1, 1), err.Error()
		var pe syntax.ParseError
		var le syntax.LangError
		switch {
		case errors.As(err, &pe):
			at, why = pe.Pos, pe.Text
		case errors.As(err, &le):
			at, why = le.Pos, strings.TrimPrefix(le.Error(), le.Pos.String()+": ")
		}
		w.refuse(at, "the script", fmt.Sprintf("it does not parse as %s: %s", w.sr.dialect, why))
		return
	}
	w.seq(f.Stmts, dirs, false)
}

// pos is p as "line:col".
func pos(p syntax.Pos) string { return fmt.Sprintf("%d:%d", p.Line(), p.Col()) }

// add records one entry found at p, unless the script already has too
// many.
func (w *walker) add(p syntax.Pos, c decision.ScriptCommand, justification string) {
	if len(w.found) == maxFound { // a denial: the commands past it are not decided
		c = decision.ScriptCommand{Pos: c.Pos, Command: "the script", Args: []string{}, Verdict: decision.Deny, Rule: w.sr.name,
			Reason: fmt.Sprintf("it has more than %d commands: deny", maxFound)}
		justification = w.sr.justification
	}
	if len(w.found) > maxFound {
		return
	}
	w.found = append(w.found, c)
	w.why = append(w.why, justification)
	w.at = append(w.at, p.Offset())
}

// sorted returns the entries found in the order they are written, and
// their justifications.
func (w *walker) sorted() ([]decision.ScriptCommand, []string) {
	idx := make([]int, len(w.found))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(w.at[a]) - int(w.at[b]) })
	found, why := make([]decision.ScriptCommand, len(idx)), make([]string, len(idx))
	for i, j := range idx {
		found[i], why[i] = w.found[j], w.why[j]
	}
	return found, why
}

// refuse records a construct the gate cannot decide: denied, or
// escalated when the rule's shellUnknown says so.
func (w *walker) refuse(at syntax.Pos, construct, why string) {
	w.refuseAs(w.sr.unknown, at, construct, why)
}

// exceed records a script past one of the bounds: a denial, whatever
// shellUnknown says, as what lies past it is not decided.
func (w *walker) exceed(at syntax.Pos, construct, why string) {
	w.refuseAs(decision.Deny, at, construct, why)
}

// refuseAs records construct at at, refused with v (Deny or Escalate).
func (w *walker) refuseAs(v decision.Verdict, at syntax.Pos, construct, why string) {
	end := "deny"
	if v == decision.Escalate {
		end = "needs human approval"
	}
	w.add(at, decision.ScriptCommand{Pos: pos(at), Command: construct, Args: []string{}, Verdict: v, Rule: w.sr.name,
		Reason: why + ": " + end}, w.sr.justification)
}

// record records a command found and its decision, and the commands of a
// shell it runs, decided inside it.
func (w *walker) record(at syntax.Pos, command string, args []string, d decision.Decision) {
	w.add(at, decision.ScriptCommand{Pos: pos(at), Command: command, Args: args, Verdict: d.Verdict, Rule: d.Rule, Reason: d.Why()}, d.Justification)
	if d.Script != nil {
		for _, c := range d.Script.Commands {
			c.Pos = pos(at) + "/" + c.Pos
			w.add(at, c, "")
		}
	}
}

// seq walks a list of statements run one after another.
func (w *walker) seq(list []*syntax.Stmt, in []string, loop bool) outcome {
	last := both(in)
	cur := in
	for _, st := range list {
		last = w.stmt(st, cur, loop)
		cur = w.union(st.Pos(), last.ok, last.fail)
	}
	return last
}

// union is the working directories of a and b together, sorted; past
// maxDirs a refusal at p.
func (w *walker) union(p syntax.Pos, a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxDirs {
		w.exceed(p, "cd", fmt.Sprintf("the script may be in more than %d working directories here", maxDirs))
		return out[:maxDirs]
	}
	return out
}

// stmt walks one statement. loop says it is in a loop's body or
// condition, where a cd would change the directory a number of times no
// reading of the text can know.
func (w *walker) stmt(st *syntax.Stmt, in []string, loop bool) outcome {
	if st.Coprocess || st.Disown {
		w.refuse(st.Pos(), "|&", "a coprocess")
		return both(in)
	}
	w.redirects(st.Redirs, in)
	if st.Cmd == nil {
		return both(in)
	}
	if st.Background { // a subshell of its own: nothing it does changes this one's directory
		w.command(st.Cmd, in, false)
		return both(in)
	}
	o := w.command(st.Cmd, in, loop)
	if st.Negated {
		o.ok, o.fail = o.fail, o.ok
	}
	return o
}

// command walks one command.
func (w *walker) command(cmd syntax.Command, in []string, loop bool) outcome {
	switch c := cmd.(type) {
	case *syntax.CallExpr:
		return w.call(c, in, loop)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			x := w.stmt(c.X, in, loop)
			y := w.stmt(c.Y, x.ok, loop)
			return outcome{y.ok, w.union(c.OpPos, x.fail, y.fail)}
		case syntax.OrStmt:
			x := w.stmt(c.X, in, loop)
			y := w.stmt(c.Y, x.fail, loop)
			return outcome{w.union(c.OpPos, x.ok, y.ok), y.fail}
		default: // a pipeline: each side a subshell of its own
			w.stmt(c.X, in, false)
			w.stmt(c.Y, in, false)
			return both(in)
		}
	case *syntax.Subshell:
		w.seq(c.Stmts, in, false)
		return both(in)
	case *syntax.Block:
		return w.seq(c.Stmts, in, loop)
	case *syntax.IfClause:
		return w.ifClause(c, in, loop)
	case *syntax.WhileClause:
		w.seq(c.Cond, in, true)
		w.seq(c.Do, in, true)
		return both(in)
	case *syntax.ForClause:
		return w.forClause(c, in)
	case *syntax.CaseClause:
		w.data(c.Word)
		all := in
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.data(p)
			}
			o := w.seq(item.Stmts, in, loop)
			all = w.union(item.Pos(), all, w.union(item.Pos(), o.ok, o.fail))
		}
		return both(all)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			return w.stmt(c.Stmt, in, loop)
		}
		return both(in)
	case *syntax.DeclClause:
		w.decl(c)
		return both(in)
	case *syntax.FuncDecl:
		w.refuse(c.Pos(), "a function definition", "a function is a name that runs other commands, called later by that name")
	case *syntax.ArithmCmd:
		w.refuse(c.Pos(), "((...))", "arithmetic evaluates variables' values as expressions, which can run commands (a[$(...)])")
	case *syntax.TestClause:
		w.refuse(c.Pos(), "[[...]]", "its arithmetic comparisons evaluate variables' values as expressions, which can run commands; use [ ]")
	case *syntax.LetClause:
		w.refuse(c.Pos(), "let", "arithmetic evaluates variables' values as expressions, which can run commands (a[$(...)])")
	case *syntax.CoprocClause:
		w.refuse(c.Pos(), "coproc", "a coprocess")
	default:
		w.refuse(cmd.Pos(), "this construct", "airlock does not read it")
	}
	return both(in)
}

// ifClause walks if, elif and else: each branch from where the
// conditions before it leave the shell.
func (w *walker) ifClause(c *syntax.IfClause, in []string, loop bool) outcome {
	cond := w.seq(c.Cond, in, loop)
	then := w.seq(c.Then, cond.ok, loop)
	els := both(cond.fail)
	if c.Else != nil {
		els = w.ifClause(c.Else, cond.fail, loop)
	}
	return outcome{w.union(c.Pos(), then.ok, els.ok), w.union(c.Pos(), then.fail, els.fail)}
}

// forClause walks a for loop over words; select and the C-style loop are
// refused.
func (w *walker) forClause(c *syntax.ForClause, in []string) outcome {
	iter, ok := c.Loop.(*syntax.WordIter)
	switch {
	case c.Select:
		w.refuse(c.Pos(), "select", "it reads its choice from the input")
	case !ok:
		w.refuse(c.Pos(), "for ((...))", "arithmetic evaluates variables' values as expressions, which can run commands")
	default:
		w.name(iter.Name.Pos(), iter.Name.Value)
		for _, x := range iter.Items {
			w.data(x)
		}
		w.seq(c.Do, in, true)
	}
	return both(in)
}

// call walks a simple command: its assignments, its name and arguments.
func (w *walker) call(c *syntax.CallExpr, in []string, loop bool) outcome {
	for _, a := range c.Assigns {
		w.assign(a)
	}
	if len(c.Args) == 0 {
		return both(in)
	}
	name, ok := w.commandName(c.Args[0])
	args, clean := w.words(c.Args[1:])
	if !ok || !clean { // refused already, where it is
		return both(in)
	}
	return w.run(c.Args[0].Pos(), name, args, c.Args[1:], in, loop)
}

// run decides a command found: a builtin airlock reads, a builtin it
// refuses, or a program decided by the tool's rules, from each working
// directory it may run in.
func (w *walker) run(at syntax.Pos, name string, args []word, raw []*syntax.Word, in []string, loop bool) outcome {
	if b, ok := builtins[name]; ok {
		return b(w, at, name, args, raw, in, loop)
	}
	if why, ok := refusedBuiltins[name]; ok {
		w.refuse(at, name, "the shell builtin "+name+" "+why)
		return both(in)
	}
	s, tool := w.sr.s, w.sr.tool
	if !strings.Contains(name, "/") || path.IsAbs(name) {
		key, refused := commandKey(name, "/")
		if refused != "" {
			w.record(at, name, texts(args), deny(refused, name, key))
			return both(in)
		}
		w.record(at, name, texts(args), s.decideWords(tool, name, key, args, in, w.depth))
		return both(in)
	}
	// A relative path: a program of each directory it may run in, all of
	// which must be allowed.
	var d decision.Decision
	for i, dir := range in {
		key, refused := commandKey(name, dir)
		di := deny(refused, name, key)
		if refused == "" {
			di = s.decideWords(tool, name, key, args, []string{dir}, w.depth)
		}
		if i == 0 || di.Verdict.Rank() < d.Verdict.Rank() {
			d = di
		}
	}
	w.record(at, name, texts(args), d)
	return both(in)
}

// commandName is the name of a command as the shell will look it up: a
// word known from the text alone, or a refusal naming what it holds.
func (w *walker) commandName(x *syntax.Word) (string, bool) {
	if !w.data(x) {
		return "", false
	}
	v := w.word(x)
	if !v.known {
		w.refuse(x.Pos(), v.text, "an expansion in command position ("+unknownKind(x)+"): the command is not known before the script runs")
		return "", false
	}
	return v.text, true
}

// words are a command's arguments as the gate knows them; clean is false
// when one holds a construct refused.
func (w *walker) words(xs []*syntax.Word) (out []word, clean bool) {
	out, clean = make([]word, 0, len(xs)), true
	for _, x := range xs {
		clean = w.data(x) && clean
		out = append(out, w.word(x))
	}
	return out, clean
}

// assign checks a plain assignment: no array, no variable that changes
// what the shell runs or how, and a value the shell computes without
// running anything.
func (w *walker) assign(a *syntax.Assign) {
	switch {
	case a.Index != nil || a.Array != nil:
		w.refuse(a.Pos(), "an array assignment", "its subscripts are arithmetic, which can run commands")
		return
	case a.Name != nil:
		w.name(a.Name.Pos(), a.Name.Value)
	}
	if a.Value != nil {
		w.data(a.Value)
	}
}

// name refuses a variable the shell or the dynamic loader reads to find
// or run code (ShellEnv clears them from its environment).
func (w *walker) name(at syntax.Pos, name string) {
	if shellVariable(name) {
		w.refuse(at, name, "setting "+name+" changes which programs the shell runs, or how")
	}
}

// decl walks bash's declaration commands: export of plain assignments is
// read; declare, local, readonly, typeset and nameref are refused.
func (w *walker) decl(c *syntax.DeclClause) {
	if c.Variant.Value != "export" {
		w.refuse(c.Pos(), c.Variant.Value, "the shell builtin "+c.Variant.Value+" "+refusedBuiltins["declare"])
		return
	}
	for _, a := range c.Args {
		if a.Name == nil { // an option, or a word only known as the shell runs
			w.refuse(a.Pos(), "export", "an argument that is not NAME or NAME=VALUE")
			continue
		}
		w.assign(a)
	}
	recordBuiltin(w, c.Pos(), "export", nil)
}

// redirects checks a statement's redirections: into files under the
// writable trees (or /dev/null and the standard streams), between
// descriptors, or here-documents whose text runs nothing.
func (w *walker) redirects(rs []*syntax.Redirect, dirs []string) {
	for _, r := range rs {
		if r.N != nil && strings.Trim(r.N.Value, "0123456789") != "" {
			w.refuse(r.Pos(), r.N.Value+r.Op.String(), "a descriptor named by a variable")
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			w.data(r.Word)
			w.data(r.Hdoc)
		case syntax.WordHdoc:
			w.data(r.Word)
		case syntax.DplIn, syntax.DplOut:
			if !w.data(r.Word) {
				continue
			}
			v := w.word(r.Word)
			switch {
			case v.known && (v.text == "-" || v.text != "" && strings.Trim(v.text, "0123456789") == ""):
			case v.known && r.Op == syntax.DplOut: // bash's >&FILE: a file
				w.file(r, v.text, dirs)
			default:
				w.refuse(r.Pos(), r.Op.String()+v.text, "a descriptor not known before the script runs")
			}
		case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
			if !w.data(r.Word) {
				continue
			}
			if v := w.word(r.Word); v.known {
				w.file(r, v.text, dirs)
			} else {
				w.refuse(r.Pos(), r.Op.String()+v.text, "a redirection to a file not known before the script runs")
			}
		default:
			w.refuse(r.Pos(), r.Op.String(), "a redirection airlock does not read")
		}
	}
}

// streamFiles are the files a redirection may name outside the trees:
// nothing, and the process's own streams.
var streamFiles = map[string]bool{"/dev/null": true, "/dev/stdin": true, "/dev/stdout": true, "/dev/stderr": true}

// file checks a redirection's file: under a writable tree from every
// directory the statement may run in.
func (w *walker) file(r *syntax.Redirect, name string, dirs []string) {
	if streamFiles[name] {
		return
	}
	for _, dir := range dirs {
		p := inDir(name, dir)
		if name == "" || !underAny(p, w.sr.s.writable) {
			w.refuse(r.Pos(), r.Op.String()+name, fmt.Sprintf("a redirection to %s, outside the trees the sandbox writes (%s)", p, strings.Join(w.sr.s.writable, ", ")))
			return
		}
	}
}

// underAny reports whether p is in one of trees.
func underAny(p string, trees []string) bool {
	for _, t := range trees {
		if strings.HasPrefix(p, t+"/") {
			return true
		}
	}
	return false
}

// writableTrees are the trees a script may redirect into: the sandbox's
// own writable tmpfs (/workspace, /tmp and /findings) and the view's
// readWrite host paths.
func writableTrees(fs policy.Filesystem) []string {
	return append([]string{"/workspace", "/tmp", "/findings"}, fs.ReadWrite...)
}
