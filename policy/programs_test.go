package policy_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestProgramAndShellRules: workspace programs' globs and shell rules are
// checked where they are written.
func TestProgramAndShellRules(t *testing.T) {
	rule := func(kind, r string) string {
		return `{"toolScopes": {"t": {"` + kind + `": [` + r + `]}}}`
	}
	for _, c := range []struct{ name, src, want string }{
		{"a glob outside the trees", rule("allow", `{"name": "r", "command": "/usr/bin/py*"}`),
			`p.json:1:58: toolScopes.t.allow[0].command: command "/usr/bin/py*" is a glob outside /workspace and /tmp`},
		{"a glob in the tree's name", rule("allow", `{"name": "r", "command": "/work*/x"}`), `is a glob outside /workspace and /tmp`},
		{"a bare glob", rule("allow", `{"name": "r", "command": "py*"}`), `is a glob outside /workspace and /tmp`},
		{"a malformed glob", rule("allow", `{"name": "r", "command": "/workspace/[x"}`), `is not a valid glob: syntax error in pattern`},
		{"a glob with a backslash", rule("allow", `{"name": "r", "command": "/workspace/\\*"}`), `is a glob with a backslash`},
		{"a shell rule on another program", rule("allow", `{"name": "r", "command": "python3", "shell": true}`),
			`toolScopes.t.allow[0].shell: command "python3" is not a shell airlock reads (sh, bash, dash)`},
		{"a deny shell rule", rule("deny", `{"name": "r", "command": "sh", "shell": true}`), `toolScopes.t.deny[0].shell: a deny rule cannot be a shell rule`},
		{"a shell rule with argPatterns", rule("allow", `{"name": "r", "command": "bash", "shell": true, "argPatterns": [["-c"]]}`),
			`a shell rule takes no argPatterns or allowExtraArgs`},
		{"shellUnknown without shell", rule("allow", `{"name": "r", "command": "bash", "shellUnknown": "escalate"}`),
			`toolScopes.t.allow[0].shellUnknown: shellUnknown without "shell": true`},
		{"a bad shellUnknown", rule("allow", `{"name": "r", "command": "bash", "shell": true, "shellUnknown": "allow"}`),
			`shellUnknown "allow" is not deny or escalate`},
		{"a search path in the workspace", `{"toolScopes": {}, "commandSearchPath": ["/usr/bin", "/workspace/bin"]}`,
			`commandSearchPath[1]: search path entry "/workspace/bin" is in /workspace, which the sandbox writes`},
		{"a search path in /tmp", `{"toolScopes": {}, "commandSearchPath": ["/tmp"]}`, `search path entry "/tmp" is in /tmp, which the sandbox writes`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.Parse("p.json", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n%v\nwant it to hold:\n%s", err, c.want)
			}
		})
	}
	for _, src := range []string{
		rule("allow", `{"name": "r", "command": "/workspace/.venv/bin/*", "allowExtraArgs": true}`),
		rule("allow", `{"name": "r", "command": "/tmp/x/[ab]?"}`),
		rule("deny", `{"name": "r", "command": "/workspace/node_modules/.bin/*"}`),
		rule("allow", `{"name": "r", "command": "/bin/bash", "shell": true, "shellUnknown": "escalate"}`),
		rule("allow", `{"name": "r", "command": "dash", "shell": true}`),
	} {
		if _, err := policy.Parse("p.json", []byte(src)); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}

func TestShellOf(t *testing.T) {
	for command, want := range map[string]string{"sh": "sh", "/bin/bash": "bash", "/usr/bin/dash": "dash", "zsh": "", "x/sh": "", "bash5": ""} {
		if got := policy.ShellOf(command); got != want {
			t.Errorf("ShellOf(%q) = %q, want %q", command, got, want)
		}
	}
}
