package cmdgate

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/airlock-sandbox/airlock/decision"
)

// reasonBuiltin is the decision of a builtin airlock reads in a script.
const reasonBuiltin = "a shell builtin that runs no program"

// builtin decides one builtin of a script airlock reads: raw are its
// arguments as parsed, args as the gate knows them, in the directories it
// may run in; it returns where it leaves the shell.
type builtin func(w *walker, at syntax.Pos, name string, args []word, raw []*syntax.Word, in []string, loop bool) outcome

// builtins are the shell builtins a script may run: they run no program
// and read nothing as code. Every other builtin is refused
// (refusedBuiltins); any other name is a program, decided by the tool's
// rules.
var builtins map[string]builtin

func init() {
	builtins = map[string]builtin{
		"cd": cdBuiltin,
		// Any arguments: they print, or do nothing, whatever they are.
		":": anyArgs, "true": anyArgs, "false": anyArgs, "echo": anyArgs,
		// Known arguments, none of which they run.
		"pwd": knownArgs0, "exit": knownArgs0, "break": knownArgs0, "continue": knownArgs0, "shift": knownArgs0, "wait": knownArgs0,
		"printf": printfBuiltin, "test": testBuiltin, "[": testBuiltin,
		"set": setBuiltin, "export": exportBuiltin, "read": readBuiltin,
		"exec": execBuiltin, "command": execBuiltin,
	}
}

// Builtin reports whether name is a shell builtin a script's decision
// reads (cd, export, test, ...): one that runs no program of its own.
func Builtin(name string) bool {
	_, ok := builtins[name]
	return ok
}

// refusedBuiltins are the builtins a script may not run, with why.
var refusedBuiltins = map[string]string{
	"eval": "runs a string as commands", "source": "runs the commands of a file", ".": "runs the commands of a file",
	"trap": "runs a string as commands on a signal", "alias": "defines a name that runs other commands",
	"unalias": "changes which commands names run", "hash": "changes which file a name runs",
	"enable": "loads builtins and turns them on and off", "builtin": "runs a builtin by a name airlock does not decide",
	"declare": "declares variables whose subscripts are arithmetic", "typeset": "declares variables whose subscripts are arithmetic",
	"local": "declares variables whose subscripts are arithmetic", "readonly": "declares variables whose subscripts are arithmetic",
	"let": "evaluates arithmetic, which can run commands", "shopt": "changes how the shell reads and runs commands",
	"mapfile": "assigns array elements", "readarray": "assigns array elements", "getopts": "assigns variables from the arguments",
	"unset": "changes variables and functions", "ulimit": "changes limits", "umask": "changes the file mode mask",
	"pushd": "changes the working directory by a stack", "popd": "changes the working directory by a stack", "dirs": "reads the directory stack",
	"bind": "is interactive", "compgen": "is interactive", "complete": "is interactive", "compopt": "is interactive",
	"fc": "runs commands from the history", "history": "is interactive", "jobs": "is interactive", "fg": "is interactive",
	"bg": "is interactive", "disown": "is interactive", "suspend": "is interactive", "logout": "is interactive",
	"kill": "signals processes", "caller": "reads the call stack", "help": "is interactive", "times": "reads the shell's times",
	"type": "reads how names resolve", "return": "returns from a function", "coproc": "starts a coprocess", "select": "reads its choice from the input",
	"function": "defines a function",
}

func recordBuiltin(w *walker, at syntax.Pos, name string, args []word) {
	w.add(at, decision.ScriptCommand{Pos: pos(at), Command: name, Args: texts(args), Verdict: decision.Allow, Reason: reasonBuiltin}, "")
}

func anyArgs(w *walker, at syntax.Pos, name string, args []word, _ []*syntax.Word, in []string, _ bool) outcome {
	recordBuiltin(w, at, name, args)
	return both(in)
}

// known refuses a builtin's first argument that holds an expansion.
func known(w *walker, at syntax.Pos, name string, args []word) bool {
	for _, a := range args {
		if !a.known {
			w.refuse(at, name, fmt.Sprintf("the shell builtin %s with an argument not known before the script runs (%s at %s)", name, a.text, a.pos))
			return false
		}
	}
	return true
}

func knownArgs0(w *walker, at syntax.Pos, name string, args []word, _ []*syntax.Word, in []string, _ bool) outcome {
	if known(w, at, name, args) {
		recordBuiltin(w, at, name, args)
	}
	return both(in)
}

// cdBuiltin follows cd lexically, as the shell does without -P ("a/.."
// is "."): one known directory, no option, not in a loop.
func cdBuiltin(w *walker, at syntax.Pos, name string, args []word, _ []*syntax.Word, in []string, loop bool) outcome {
	switch {
	case loop:
		w.refuse(at, "cd", "cd in a loop: how many times it runs, and so the working directory after it, is not known before the script runs")
		return both(in)
	case len(args) != 1 || !args[0].known || args[0].text == "" || strings.HasPrefix(args[0].text, "-"):
		w.refuse(at, "cd", "cd without exactly one directory known before the script runs (no option, no -, no $HOME)")
		return both(in)
	}
	var ok []string
	for _, dir := range in {
		ok = append(ok, inDir(args[0].text, dir))
	}
	ok = w.union(at, ok, nil)
	recordBuiltin(w, at, name, args)
	return outcome{ok: ok, fail: in}
}

// printfBuiltin accepts a known format that is not an option (bash's -v
// assigns a variable, subscripts and all).
func printfBuiltin(w *walker, at syntax.Pos, name string, args []word, _ []*syntax.Word, in []string, _ bool) outcome {
	if len(args) > 0 && (!args[0].known || strings.HasPrefix(args[0].text, "-")) {
		w.refuse(at, name, "printf whose format is an option or is not known before the script runs (-v assigns a variable)")
		return both(in)
	}
	recordBuiltin(w, at, name, args)
	return both(in)
}

// testBuiltin accepts known arguments without -v or -R, which read a
// variable by a name, subscripts and all.
func testBuiltin(w *walker, at syntax.Pos, name string, args []word, raw []*syntax.Word, in []string, loop bool) outcome {
	for _, a := range args {
		if a.known && (a.text == "-v" || a.text == "-R") {
			w.refuse(at, name, name+" "+a.text+" reads a variable by a name, whose subscript is arithmetic")
			return both(in)
		}
	}
	return knownArgs0(w, at, name, args, raw, in, loop)
}

// setOptions are the options set may turn on and off.
const setOptions = "efnuvxC"

// setBuiltin accepts set with options of setOptions or shellOptions, or
// with -- and positional parameters.
func setBuiltin(w *walker, at syntax.Pos, name string, args []word, raw []*syntax.Word, in []string, loop bool) outcome {
	if !known(w, at, name, args) {
		return both(in)
	}
	for i := 0; i < len(args); i++ {
		a := args[i].text
		switch {
		case a == "--":
			i = len(args)
		case (a == "-o" || a == "+o") && i+1 < len(args) && shellOptions[args[i+1].text]:
			i++
		case len(a) > 1 && (a[0] == '-' || a[0] == '+') && strings.Trim(a[1:], setOptions) == "":
		default:
			w.refuse(at, name, fmt.Sprintf("set %s: only the options -%s and -o %s", a, setOptions, "errexit, nounset, pipefail, xtrace, verbose, noglob, noclobber"))
			return both(in)
		}
	}
	recordBuiltin(w, at, name, args)
	return both(in)
}

// exportBuiltin accepts NAME and NAME=VALUE of variables that do not
// change what the shell runs (bash parses export itself: walker.decl).
func exportBuiltin(w *walker, at syntax.Pos, name string, args []word, raw []*syntax.Word, in []string, _ bool) outcome {
	for _, x := range raw {
		lit, ok := x.Parts[0].(*syntax.Lit)
		n := ""
		if ok {
			n, _, _ = strings.Cut(lit.Value, "=")
		}
		if !validName(n) || len(x.Parts) > 1 && !strings.Contains(lit.Value, "=") {
			w.refuse(x.Pos(), name, "an argument that is not NAME or NAME=VALUE")
			return both(in)
		}
		w.name(x.Pos(), n)
	}
	recordBuiltin(w, at, name, args)
	return both(in)
}

// readBuiltin accepts -r and plain variable names.
func readBuiltin(w *walker, at syntax.Pos, name string, args []word, _ []*syntax.Word, in []string, _ bool) outcome {
	if !known(w, at, name, args) {
		return both(in)
	}
	for _, a := range args {
		if a.text != "-r" && !validName(a.text) {
			w.refuse(at, name, "read with an argument that is not -r or a plain variable name")
			return both(in)
		}
		w.name(at, a.text)
	}
	recordBuiltin(w, at, name, args)
	return both(in)
}

// execBuiltin reads exec and command: with no command (exec's
// redirections only, or command -v/-V NAME, which only look a name up),
// or as the command they run, without other options.
func execBuiltin(w *walker, at syntax.Pos, name string, args []word, raw []*syntax.Word, in []string, loop bool) outcome {
	if len(args) == 0 {
		recordBuiltin(w, at, name, args)
		return both(in)
	}
	if name == "command" && args[0].known && (args[0].text == "-v" || args[0].text == "-V") {
		return knownArgs0(w, at, name, args, raw, in, loop)
	}
	if !args[0].known || strings.HasPrefix(args[0].text, "-") {
		w.refuse(at, name, name+" with an option, or of a command not known before the script runs")
		return both(in)
	}
	return w.run(raw[0].Pos(), args[0].text, args[1:], raw[1:], in, loop)
}

// validName reports whether n is a shell variable name.
func validName(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for _, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// shellVariables are the variables a shell or the dynamic loader reads
// to find or run code, or that change how the shell reads the script
// and follows cd; their prefixes are in shellVariable.
var shellVariables = map[string]bool{
	"PATH": true, "ENV": true, "BASH_ENV": true, "CDPATH": true, "IFS": true, "PS0": true, "PS1": true, "PS2": true,
	"PS3": true, "PS4": true, "PROMPT_COMMAND": true, "SHELLOPTS": true, "BASHOPTS": true, "GLOBIGNORE": true,
	"EXECIGNORE": true, "BASH_XTRACEFD": true, "PWD": true, "OLDPWD": true, "POSIXLY_CORRECT": true,
	"BASH_LOADABLES_PATH": true, "BASH_COMPAT": true, "BASH_CMDS": true, "BASH_ALIASES": true, "GCONV_PATH": true,
	"HISTFILE": true, "INPUTRC": true,
}

// shellVariable reports whether the shell or the loader reads name to
// find or run code.
func shellVariable(name string) bool {
	return shellVariables[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "BASH_FUNC_")
}

// ShellEnv is the environment a shell rule's script runs with: env
// without any variable a shell or the dynamic loader reads to find or
// run code (ENV, BASH_ENV, SHELLOPTS, PS4, LD_PRELOAD, ...) nor an
// exported function (BASH_FUNC_*, or any value starting "() {"), then
// PATH as the search path, so each bare name finds the file the gate
// decided on, and PWD as dir, the directory the gate followed cd from.
func ShellEnv(env []string, searchPath []string, dir string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if shellVariable(name) || strings.HasPrefix(value, "() {") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+strings.Join(searchPath, ":"), "PWD="+path.Clean(dir))
}

// ShellArgv is the command line a shell rule's script runs with: argv as
// asked, with bash's --noprofile and --norc after its name, so that no
// startup file runs (a login shell's /etc/profile and ~/.profile are code
// the agent can write; -c alone reads none but through BASH_ENV, which
// ShellEnv clears). dialect is decision.Script.Shell; sh and dash are
// refused -l by the gate, as they have no such option.
func ShellArgv(dialect string, argv []string) []string {
	if dialect != "bash" || len(argv) == 0 {
		return argv
	}
	return append([]string{argv[0], "--noprofile", "--norc"}, argv[1:]...)
}
