package cmdgate_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
)

// shellPolicy is a tool that may run sh and bash scripts made of a few
// programs, with deny and escalate rules on some of their arguments.
const shellPolicy = `{"toolScopes": {"dev": {
	"allow": [{"name": "sh", "command": "sh", "shell": true},
	          {"name": "bash", "command": "/bin/bash", "shell": true},
	          {"name": "cat", "command": "cat", "allowExtraArgs": true},
	          {"name": "wc", "command": "wc", "allowExtraArgs": true},
	          {"name": "tail", "command": "tail", "allowExtraArgs": true},
	          {"name": "pytest", "command": "pytest", "argPatterns": [["-x"]]},
	          {"name": "git", "command": "git", "allowExtraArgs": true},
	          {"name": "venv", "command": "/workspace/.venv/bin/*", "allowExtraArgs": true}],
	"deny": [{"name": "no-env", "command": "cat", "argPatterns": [["/workspace/sub/.env"]], "allowExtraArgs": true},
	         {"name": "no-force", "command": "git", "argPatterns": [["push", "--force"]], "allowExtraArgs": true}],
	"escalate": [{"name": "push", "command": "git", "argPatterns": [["push"]], "allowExtraArgs": true}]
}}}`

// script decides sh -c src (bash when shell is "bash") for tool dev.
func script(t *testing.T, g *cmdgate.Gate, shell, src string) decision.Decision {
	t.Helper()
	cmd := "sh"
	if shell == "bash" {
		cmd = "/bin/bash"
	}
	return g.Decide("dev", cmd, []string{"-c", src}, ws)
}

// TestScriptAccepted: every form the gate reads with certainty, each
// simple command decided against the tool's rules.
func TestScriptAccepted(t *testing.T) {
	g := gateFrom(t, shellPolicy)
	for _, c := range []struct {
		shell, src string
		commands   int // commands and builtins found
	}{
		{"sh", "cat README", 1},
		{"sh", "cd sub && cat x | wc -l", 3},
		{"sh", "cd src && pytest -x 2>&1 | tail -50", 3},
		{"sh", "cat a; cat b", 2},
		{"sh", "cat a || cat b && wc", 3},
		{"sh", "(cd sub && cat x) ; cat y", 3},
		{"sh", "{ cat a; wc; } > out.txt", 2},
		{"sh", "! cat a", 1},
		{"sh", "cat a &\nwait", 2},
		{"sh", "cat a > /workspace/out 2>/dev/null < in.txt >> /tmp/log 2>&1", 1},
		{"sh", "cat a >&2; cat b 1>&- <&0", 2},
		{"sh", "X=1; Y=two cat a", 1},
		{"sh", "export X=1 Y; wc \"$X\" '$Y' a\\ b", 2},
		{"sh", "cat 'it''s' \"a \\\"q\\\" b\"", 1},
		{"sh", "if cat a; then wc; elif cat b; then :; else true; fi", 5},
		{"sh", "for f in a b *.py; do wc \"$f\"; done", 1},
		{"sh", "while cat a; do wc; break; done", 3},
		{"sh", "case x in a) cat a ;; *) wc ;; esac", 2},
		{"sh", "cat <<EOF\nhello $USER\nEOF", 1},
		{"sh", "cat <<'EOF'\n$(not run)\nEOF", 1},
		{"sh", "echo hi; printf '%s\\n' x; test -f a && [ -d b ]; pwd; set -eu; set -o pipefail", 7},
		{"sh", "command -v git && exec git status", 2},
		{"sh", "read -r line < in.txt; exit 0", 2},
		{"sh", "# a comment\ncat a # another", 1},
		{"sh", "git log --oneline | cat", 2},
		{"sh", ".venv/bin/pip install -e . && /workspace/.venv/bin/pytest -q", 2},
		{"sh", "cd tests && /workspace/.venv/bin/python -m pytest", 2},
		{"sh", "sh -c 'cat a && wc'", 3},
		{"bash", "cat a |& wc", 2},
		{"bash", "time cat a", 1},
		{"bash", "export X=1; cat <<< \"$X\"", 2},
		{"sh", "", 0},
	} {
		d := script(t, g, c.shell, c.src)
		if d.Verdict != decision.Allow || d.Script == nil || len(d.Script.Commands) != c.commands {
			t.Errorf("%s -c %q: got %s %q with %d commands; want allow with %d", c.shell, c.src, d.Verdict, d.Reason, commands(d), c.commands)
			continue
		}
		if d.Rule != map[string]string{"sh": "sh", "bash": "bash"}[c.shell] || d.Script.Shell != c.shell {
			t.Errorf("%s -c %q: rule %q, shell %q", c.shell, c.src, d.Rule, d.Script.Shell)
		}
	}
}

func commands(d decision.Decision) int {
	if d.Script == nil {
		return -1
	}
	return len(d.Script.Commands)
}

// TestScriptRefused: every construct whose command cannot be known
// before it runs is refused, with a reason naming it and where it is.
func TestScriptRefused(t *testing.T) {
	g := gateFrom(t, shellPolicy)
	for _, c := range []struct {
		shell, src string
		construct  string // what the reason names, at pos
		pos        string
	}{
		{"sh", "cat $(id)", "$(...) at 1:5", "a command substitution"},
		{"sh", "cat `id`", "`...` at 1:5", "a command substitution"},
		{"sh", "X=$(id) cat a", "$(...) at 1:3", "a command substitution"},
		{"sh", "cat <<EOF\n$(id)\nEOF", "$(...) at 2:1", "a command substitution"},
		{"bash", "cat <(id)", "<(...) at 1:5", "a process substitution"},
		{"bash", "cat a > >(wc)", ">(...) at 1:9", "a process substitution"},
		{"sh", "cat a; eval cat b", "eval at 1:8", "runs a string as commands"},
		{"sh", ". ./env.sh", ". at 1:1", "runs the commands of a file"},
		{"sh", "source env.sh", "source at 1:1", "runs the commands of a file"},
		{"sh", "$CMD a", "$CMD at 1:1", "an expansion in command position (a variable)"},
		{"sh", "\"$CMD\" a", "\"$CMD\" at 1:1", "an expansion in command position (a variable)"},
		{"sh", "/usr/bin/ca* a", "/usr/bin/ca* at 1:1", "an expansion in command position (a glob)"},
		{"sh", "~/bin/x", "~/bin/x at 1:1", "an expansion in command position (a ~)"},
		{"bash", "{cat,.env}", "{cat,.env} at 1:1", "an expansion in command position (a brace expansion or a glob)"},
		{"sh", "{cat,.env}", "{cat,.env} at 1:1", "an expansion in command position (a brace expansion or a glob)"},
		{"sh", "f() { cat a; }; f", "a function definition at 1:1", "a function is a name"},
		{"bash", "function f { cat a; }", "a function definition at 1:1", "a function is a name"},
		{"bash", "alias c=cat", "alias at 1:1", "defines a name"},
		{"sh", "trap 'cat a' EXIT", "trap at 1:1", "runs a string as commands on a signal"},
		{"sh", "exec -a x cat", "exec at 1:1", "with an option"},
		{"sh", "cat a > /etc/passwd", ">/etc/passwd at 1:7", "outside the trees the sandbox writes"},
		{"sh", "cd /etc && cat a > x", ">x at 1:18", "a redirection to /etc/x"},
		{"sh", "cat a > \"$F\"", ">\"$F\" at 1:7", "a file not known before the script runs"},
		{"bash", "cat a {fd}> x", "{fd}> at 1:7", "a descriptor named by a variable"},
		{"bash", "((x = 1))", "((...)) at 1:1", "arithmetic"},
		{"bash", "[[ -f a ]]", "[[...]] at 1:1", "use [ ]"},
		{"bash", "let x=1", "let at 1:1", "arithmetic"},
		{"sh", "cat $((1+2))", "$((...)) at 1:5", "arithmetic"},
		{"bash", "cat ${!x}", "${!...} at 1:5", "an indirect expansion"},
		{"bash", "cat ${a[0]}", "${...[...]} at 1:5", "arithmetic"},
		{"sh", "cat ${x:=y}", "${...=...} at 1:5", "assigns a variable"},
		{"bash", "cat ${x@P}", "${...@...} at 1:5", "as a prompt"},
		{"sh", "PATH=/workspace/bin cat a", "PATH at 1:1", "changes which programs the shell runs"},
		{"sh", "BASH_ENV=/workspace/x sh -c 'cat a'", "BASH_ENV at 1:1", "changes which programs"},
		{"sh", "export LD_PRELOAD=/workspace/x.so", "LD_PRELOAD at 1:8", "changes which programs"},
		{"bash", "export IFS=x", "IFS at 1:8", "changes which programs"},
		{"bash", "a=(1 2)", "an array assignment at 1:1", "subscripts are arithmetic"},
		{"sh", "for d in a b; do cd $d; done", "cd at 1:18", "cd in a loop"},
		{"sh", "cd $D && cat a", "cd at 1:1", "exactly one directory"},
		{"sh", "cd && cat a", "cd at 1:1", "exactly one directory"},
		{"sh", "cd - && cat a", "cd at 1:1", "exactly one directory"},
		{"bash", "coproc cat a", "coproc at 1:1", "a coprocess"},
		{"bash", "select x in a b; do cat a; done", "select at 1:1", "reads its choice"},
		{"bash", "for ((i=0; i<2; i++)); do cat a; done", "for ((...)) at 1:1", "arithmetic"},
		{"sh", "cat 'unterminated", "the script at 1:5", "does not parse as sh"},
		{"sh", "cat a &> x", "the script at 1:7", "does not parse as sh"},
		{"sh", "printf -v x y", "printf at 1:1", "-v assigns a variable"},
		{"sh", "test -v x", "test at 1:1", "reads a variable by a name"},
		{"sh", "set -o posix", "set at 1:1", "only the options"},
		{"sh", "read 'a[$(id)]'", "read at 1:1", "not -r or a plain variable name"},
		{"sh", "unset PATH", "unset at 1:1", "changes variables"},
		{"sh", "hash -p /workspace/x cat", "hash at 1:1", "changes which file a name runs"},
		{"sh", "sh -c \"$S\"", "sh at 1:1", "not known before the script runs"},
		{"sh", "pytest $ARGS", "pytest at 1:1", "not known before the script runs ($ARGS at 1:8)"},
	} {
		d := script(t, g, c.shell, c.src)
		if d.Verdict != decision.Deny || !strings.Contains(d.Reason, "in its script, "+c.construct+": ") || !strings.Contains(d.Reason, c.pos) {
			t.Errorf("%s -c %q:\n got  %s %q\n want deny naming %q and %q", c.shell, c.src, d.Verdict, d.Reason, c.construct, c.pos)
		}
	}
}

// TestScriptCommandsDecided: each command of a script gets the tool's
// rules, deny and escalate rules too; the script takes the gravest.
func TestScriptCommandsDecided(t *testing.T) {
	g := gateFrom(t, shellPolicy)
	for _, c := range []struct {
		src     string
		verdict decision.Verdict
		rule    string
		reason  string
	}{
		{"cat a && rm -rf /", decision.Deny, "", `in its script, rm at 1:10: "rm" is not in the allowlist of tool "dev"`},
		{"pytest -x -k foo", decision.Deny, "", `in its script, pytest at 1:1: "pytest" is in the allowlist of tool "dev" but its arguments match no signature`},
		{"git push origin", decision.Escalate, "push", `in its script, git at 1:1: "git" matched escalate rule "push" of tool "dev": needs human approval`},
		{"git push origin; git push --force", decision.Deny, "no-force", `in its script, git at 1:18: "git" matched deny rule "no-force"`},
		{"git $OP --force", decision.Deny, "no-force", `git at 1:1: "git" matched deny rule "no-force"`},
		{"git $OP", decision.Deny, "no-force", `"git" matched deny rule "no-force"`},
		{"git status $X", decision.Allow, "sh", ""},
		{"/usr/bin/cat a", decision.Deny, "", `"/usr/bin/cat" is not in the allowlist`},
		{"./cat a", decision.Deny, "", `"./cat" is /workspace/cat from the working directory`},
		{"cd src && ../.venv/bin/pytest", decision.Deny, "", `"../.venv/bin/pytest" names a relative path that is not clean (a '.' or '..' inside, '//', a trailing '/'): the kernel resolves '..' through links, the gate lexically; name it as "/workspace/.venv/bin/pytest": deny`},
		{"sh -lc 'cat a'", decision.Deny, "sh", `-l at 1:1: a login shell first runs /etc/profile and ~/.profile`},
		{"sh -c 'sh -c \"sh -c \\\"sh -c cat\\\"\"'", decision.Deny, "sh", "more than 3 shells inside one another"},
	} {
		d := script(t, g, "sh", c.src)
		if d.Verdict != c.verdict || d.Rule != c.rule || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("sh -c %q:\n got  %s %q rule %q\n want %s containing %q rule %q", c.src, d.Verdict, d.Reason, d.Rule, c.verdict, c.reason, c.rule)
		}
	}
}

// TestScriptFollowsCd: cd is followed as the shell follows it, lexically
// and only where it succeeded, so that a deny rule on a path sees the
// directory each command runs in; a subshell's or a pipeline's cd stays
// there.
func TestScriptFollowsCd(t *testing.T) {
	g := gateFrom(t, shellPolicy)
	for _, c := range []struct {
		src  string
		deny bool
	}{
		{"cat sub/.env", true},
		{"cd sub && cat .env", true},
		{"cd sub; cat .env", true}, // cd may have failed, or not
		{"cd /workspace/sub && cat ./.env", true},
		{"cd sub/x/.. && cat .env", true},
		{"if cd sub; then cat .env; fi", true},
		{"cd a || cd sub; cat .env", true},
		{"cd sub || cat .env", false}, // cat runs only where cd failed
		{"(cd sub); cat .env", false},
		{"cd sub | cat; cat .env", false},
		{"cd sub & cat .env", false},
		{"cat .env", false},
		{"cd sub && cat $F", true},    // $F may be .env
		{"cd sub && cat *.py", false}, // a glob of *.py is no .env
		{"cd sub && cat *", true},
		{"cd sub && sh -c 'cat .env'", true},
		{"cd sub && cat {x,.env}", true}, // bash, and a sh that is bash, expand braces
	} {
		d := script(t, g, "sh", c.src)
		if got := d.Verdict == decision.Deny; got != c.deny {
			t.Errorf("sh -c %q: got %s %q; want deny %v", c.src, d.Verdict, d.Reason, c.deny)
		}
	}
}

// TestScriptRecordsEveryCommand: the decision lists every command found,
// in the order written, with its own decision, a shell's inside it too.
func TestScriptRecordsEveryCommand(t *testing.T) {
	g := gateFrom(t, shellPolicy)
	d := script(t, g, "sh", "cd sub && cat x | wc -l > /tmp/n; sh -c 'git status' && git push")
	want := []decision.ScriptCommand{
		{Pos: "1:1", Command: "cd", Args: []string{"sub"}, Verdict: decision.Allow, Reason: "a shell builtin that runs no program"},
		{Pos: "1:11", Command: "cat", Args: []string{"x"}, Verdict: decision.Allow, Rule: "cat", Reason: `"cat" matched allow rule "cat" of tool "dev"`},
		{Pos: "1:19", Command: "wc", Args: []string{"-l"}, Verdict: decision.Allow, Rule: "wc", Reason: `"wc" matched allow rule "wc" of tool "dev"`},
		{Pos: "1:35", Command: "sh", Args: []string{"-c", "git status"}, Verdict: decision.Allow, Rule: "sh",
			Reason: `"sh" matched shell rule "sh" of tool "dev": each of the 1 commands of its script is allowed`},
		{Pos: "1:35/1:1", Command: "git", Args: []string{"status"}, Verdict: decision.Allow, Rule: "git", Reason: `"git" matched allow rule "git" of tool "dev"`},
		{Pos: "1:57", Command: "git", Args: []string{"push"}, Verdict: decision.Escalate, Rule: "push", Reason: `"git" matched escalate rule "push" of tool "dev": needs human approval`},
	}
	if d.Verdict != decision.Escalate || d.Script == nil || len(d.Script.Commands) != len(want) {
		t.Fatalf("got %s %q with %d commands; want escalate with %d", d.Verdict, d.Reason, commands(d), len(want))
	}
	for i, c := range d.Script.Commands {
		if c.Pos != want[i].Pos || c.Command != want[i].Command || strings.Join(c.Args, " ") != strings.Join(want[i].Args, " ") ||
			c.Verdict != want[i].Verdict || c.Rule != want[i].Rule || c.Reason != want[i].Reason {
			t.Errorf("command %d:\n got  %+v\n want %+v", i, c, want[i])
		}
	}
}

// TestShellUnknownEscalates: a rule with "shellUnknown": "escalate"
// escalates what it cannot read instead of refusing it; a command a rule
// denies is still denied.
func TestShellUnknownEscalates(t *testing.T) {
	g := gateFrom(t, `{"toolScopes": {"dev": {
		"allow": [{"name": "sh", "command": "sh", "shell": true, "shellUnknown": "escalate", "justification": "scripts a person can read"},
		          {"name": "cat", "command": "cat", "allowExtraArgs": true}],
		"deny": [{"name": "no-rm", "command": "rm", "allowExtraArgs": true}]}}}`)
	d := g.Decide("dev", "sh", []string{"-c", "cat $(ls)"}, ws)
	if d.Verdict != decision.Escalate || d.Rule != "sh" || d.Justification != "scripts a person can read" ||
		!strings.Contains(d.Reason, "$(...) at 1:5: a command substitution: its output is not known before the script runs: needs human approval") {
		t.Errorf("got %s %q rule %q justification %q", d.Verdict, d.Reason, d.Rule, d.Justification)
	}
	if d := g.Decide("dev", "sh", []string{"-c", "eval x; rm a"}, ws); d.Verdict != decision.Deny || d.Rule != "no-rm" {
		t.Errorf("got %s %q rule %q; want the deny rule's denial", d.Verdict, d.Reason, d.Rule)
	}
	// Past 256 commands the rest are not decided: a denial, never an
	// escalation a person approves without the gate's word on them.
	if d := g.Decide("dev", "sh", []string{"-c", strings.Repeat("cat a; ", 300) + "rm a"}, ws); d.Verdict != decision.Deny ||
		!strings.Contains(d.Reason, "in its script, the script at 1:1793: it has more than 256 commands: deny") {
		t.Errorf("got %s %q", d.Verdict, d.Reason)
	}
}

// TestShellInvocations: a shell rule accepts -c SCRIPT after options it
// knows, and nothing else of the shell's; bash -l runs without its
// profile files (ShellArgv), sh -l is refused.
func TestShellInvocations(t *testing.T) {
	g := gateFrom(t, shellPolicy)
	for _, c := range []struct {
		cmd     string
		args    []string
		verdict decision.Verdict
	}{
		{"sh", []string{"-c", "cat a"}, decision.Allow},
		{"sh", []string{"-ec", "cat a"}, decision.Allow},
		{"sh", []string{"-e", "-u", "-c", "cat a", "name", "arg1"}, decision.Allow},
		{"sh", []string{"-o", "pipefail", "-c", "cat a"}, decision.Allow},
		{"/bin/bash", []string{"-lc", "cat a"}, decision.Allow},
		{"/bin/bash", []string{"-l", "-c", "cat a"}, decision.Allow},
		{"sh", []string{"-lc", "cat a"}, decision.Deny},
		{"sh", []string{"script.sh"}, decision.Deny},
		{"sh", []string{"-i", "-c", "cat a"}, decision.Deny},
		{"sh", []string{"-c"}, decision.Deny},
		{"sh", []string{"-c", "-c", "cat a"}, decision.Deny},
		{"sh", []string{"--login", "-c", "cat a"}, decision.Deny},
		{"sh", []string{"-o", "posix", "-c", "cat a"}, decision.Deny},
		{"sh", []string{"+c", "cat a"}, decision.Deny},
		{"bash", []string{"-c", "cat a"}, decision.Deny}, // the rule names /bin/bash
		{"sh", []string{"-c", strings.Repeat("cat a;", 20000)}, decision.Deny},
		{"sh", []string{"-c", strings.Repeat("cat a;", 300)}, decision.Deny},
	} {
		if d := g.Decide("dev", c.cmd, c.args, ws); d.Verdict != c.verdict {
			t.Errorf("%s %q: got %s %q; want %s", c.cmd, c.args, d.Verdict, d.Reason, c.verdict)
		}
	}
	d := g.Decide("dev", "sh", []string{"script.sh"}, ws)
	if want := `"sh" is in the allowlist of tool "dev" by shell rule "sh", which accepts only -c SCRIPT (options -e, -u, -x, -v, -l, -o NAME before it): deny`; d.Reason != want {
		t.Errorf("got %q\nwant %q", d.Reason, want)
	}
	if got := cmdgate.ShellArgv("bash", []string{"bash", "-lc", "x"}); strings.Join(got, " ") != "bash --noprofile --norc -lc x" {
		t.Errorf("ShellArgv(bash) = %q", got)
	}
	if got := cmdgate.ShellArgv("sh", []string{"sh", "-c", "x"}); strings.Join(got, " ") != "sh -c x" {
		t.Errorf("ShellArgv(sh) = %q", got)
	}
}

// TestShellEnv: what a shell reads to find or run code is not in a
// script's environment; PATH is the search path, PWD the directory.
func TestShellEnv(t *testing.T) {
	env := cmdgate.ShellEnv([]string{"PATH=/evil", "HOME=/workspace", "ENV=/workspace/e", "BASH_ENV=/workspace/e",
		"BASH_FUNC_cat%%=() { id; }", "cat=() { id; }", "SHELLOPTS=xtrace", "PS4=$(id)", "LD_PRELOAD=/workspace/x.so",
		"CDPATH=/etc", "PWD=/etc", "OLDPWD=/", "IFS=x", "LANG=C.UTF-8"}, []string{"/usr/bin", "/bin"}, "/workspace/sub")
	if got, want := strings.Join(env, " "), "HOME=/workspace LANG=C.UTF-8 PATH=/usr/bin:/bin PWD=/workspace/sub"; got != want {
		t.Errorf("ShellEnv = %q\nwant %q", got, want)
	}
}
