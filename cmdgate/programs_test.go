package cmdgate_test

import (
	"testing"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestWorkspacePrograms: a rule may name a workspace program by its path
// or a glob of one; a request names it by that path, or a relative one
// from its working directory, and the rules decide on the absolute path.
func TestWorkspacePrograms(t *testing.T) {
	g := gateFrom(t, `{"toolScopes": {"dev": {
		"allow": [{"name": "venv", "command": "/workspace/.venv/bin/*", "allowExtraArgs": true},
		          {"name": "bins", "command": "/workspace/node_modules/.bin/*", "argPatterns": [["test"]]},
		          {"name": "gradlew", "command": "/workspace/gradlew", "argPatterns": [["build"]]},
		          {"name": "tmp", "command": "/tmp/tools/?un", "allowExtraArgs": true}],
		"escalate": [{"name": "pip", "command": "/workspace/.venv/bin/pip", "argPatterns": [["install"]], "allowExtraArgs": true}],
		"deny": [{"name": "no-uninstall", "command": "/workspace/.venv/bin/p*", "argPatterns": [["uninstall"]], "allowExtraArgs": true}]
	}}}`)
	sub := ws + "/sub"
	for _, c := range []struct {
		dir, command string
		args         []string
		verdict      decision.Verdict
		rule, reason string
	}{
		{ws, "/workspace/.venv/bin/python", []string{"-c", "1"}, decision.Allow, "venv", `"/workspace/.venv/bin/python" matched allow rule "venv" of tool "dev"`},
		{ws, ".venv/bin/python", nil, decision.Allow, "venv", `".venv/bin/python" matched allow rule "venv" of tool "dev"`},
		{ws, "./.venv/bin/python", nil, decision.Allow, "venv", `"./.venv/bin/python" matched allow rule "venv" of tool "dev"`},
		{sub, "../.venv/bin/python", nil, decision.Deny, "", `"../.venv/bin/python" names a relative path that is not clean (a '.' or '..' inside, '//', a trailing '/'): the kernel resolves '..' through links, the gate lexically; name it as "/workspace/.venv/bin/python": deny`},
		{sub, ".venv/bin/python", nil, decision.Deny, "", `".venv/bin/python" is /workspace/sub/.venv/bin/python from the working directory, which is not in the allowlist of tool "dev" (allowlist: [/workspace/.venv/bin/*, /workspace/node_modules/.bin/*, /workspace/gradlew, /tmp/tools/?un]): deny by default`},
		// A glob's * does not cross a /.
		{ws, "/workspace/.venv/bin/sub/python", nil, decision.Deny, "", `"/workspace/.venv/bin/sub/python" is not in the allowlist of tool "dev" (allowlist: [/workspace/.venv/bin/*, /workspace/node_modules/.bin/*, /workspace/gradlew, /tmp/tools/?un]): deny by default`},
		{ws, "/workspace/.venv/bin/../bin/python", nil, decision.Deny, "", `"/workspace/.venv/bin/../bin/python" is not a clean absolute path; name it as "/workspace/.venv/bin/python": deny`},
		// Deny and escalate rules, by path or glob, over every rule.
		{ws, ".venv/bin/pip", []string{"install", "x"}, decision.Escalate, "pip", `"/workspace/.venv/bin/pip" matched escalate rule "pip" of tool "dev": needs human approval`},
		{ws, ".venv/bin/pip", []string{"uninstall", "x"}, decision.Deny, "no-uninstall", `".venv/bin/pip" matched deny rule "no-uninstall" of tool "dev"`},
		{ws, ".venv/bin/pytest", []string{"uninstall"}, decision.Deny, "no-uninstall", `".venv/bin/pytest" matched deny rule "no-uninstall" of tool "dev"`},
		{ws, ".venv/bin/pip", []string{"list"}, decision.Allow, "venv", `".venv/bin/pip" matched allow rule "venv" of tool "dev"`},
		{ws, "node_modules/.bin/jest", []string{"test"}, decision.Allow, "bins", `"node_modules/.bin/jest" matched allow rule "bins" of tool "dev"`},
		{ws, "node_modules/.bin/jest", []string{"--watch"}, decision.Deny, "", `"node_modules/.bin/jest" is in the allowlist of tool "dev" but its arguments match no signature: deny by default`},
		{ws, "./gradlew", []string{"build"}, decision.Allow, "gradlew", `"/workspace/gradlew" matched allow rule "gradlew" of tool "dev"`},
		{ws, "/tmp/tools/run", nil, decision.Allow, "tmp", `"/tmp/tools/run" matched allow rule "tmp" of tool "dev"`},
		{"/tmp/tools", "./run", nil, decision.Allow, "tmp", `"./run" matched allow rule "tmp" of tool "dev"`},
		// A bare name never finds a workspace program.
		{ws, "python", nil, decision.Deny, "", `"python" is not in the allowlist of tool "dev" (allowlist: [/workspace/.venv/bin/*, /workspace/node_modules/.bin/*, /workspace/gradlew, /tmp/tools/?un]): deny by default`},
	} {
		d := g.Decide("dev", c.command, c.args, c.dir)
		if d.Verdict != c.verdict || d.Rule != c.rule || d.Reason != c.reason {
			t.Errorf("Decide(%q, %q) from %s\n got  %s %q rule %q\n want %s %q rule %q", c.command, c.args, c.dir, d.Verdict, d.Reason, d.Rule, c.verdict, c.reason, c.rule)
		}
	}
}

// TestProgram: where a path-named command lies, and which are workspace
// programs; the trees are the sandbox's own.
func TestProgram(t *testing.T) {
	if want := []string{sandbox.WorkspaceDir, sandbox.TmpDir}; len(policy.ProgramTrees) != 2 || policy.ProgramTrees[0] != want[0] || policy.ProgramTrees[1] != want[1] {
		t.Fatalf("policy.ProgramTrees = %q, want the sandbox's %q", policy.ProgramTrees, want)
	}
	for _, c := range []struct{ command, dir, path, tree string }{
		{"pytest", ws, "", ""},
		{"/usr/bin/git", ws, "/usr/bin/git", ""},
		{"./gradlew", ws, "/workspace/gradlew", "/workspace"},
		{"bin/x", "/tmp", "/tmp/bin/x", "/tmp"},
		{"/workspace", ws, "/workspace", ""},
		{"/workspacex/y", ws, "/workspacex/y", ""},
		{"../x", ws + "/a", "", ""},
		{"/usr/../workspace/x", ws, "", ""},
	} {
		p, tree := cmdgate.Program(c.command, c.dir)
		if p != c.path || tree != c.tree {
			t.Errorf("Program(%q, %q) = %q, %q; want %q, %q", c.command, c.dir, p, tree, c.path, c.tree)
		}
	}
}
