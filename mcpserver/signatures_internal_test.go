package mcpserver

import (
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestSignatures: a rule as a tool's description shows it, a shell rule's
// -c SCRIPT and a glob of workspace programs included.
func TestSignatures(t *testing.T) {
	for _, c := range []struct {
		r    policy.CommandPattern
		want string
	}{
		{policy.CommandPattern{Command: "cat", ArgPatterns: [][]string{{"a b"}, {"c"}}, AllowExtraArgs: true}, "cat 'a b' … | cat c …"},
		{policy.CommandPattern{Command: "ls"}, "ls (no arguments)"},
		{policy.CommandPattern{Command: "/workspace/.venv/bin/*", AllowExtraArgs: true}, "/workspace/.venv/bin/* … (any arguments)"},
		{policy.CommandPattern{Command: "/workspace/bin/?x", ArgPatterns: [][]string{{"run"}}}, "/workspace/bin/?x run"},
		{policy.CommandPattern{Command: "sh", Shell: true}, "sh -c SCRIPT (each command of SCRIPT is decided by these rules; $(...), eval, source, " +
			"a variable or glob as a command, functions and redirections outside the writable trees are refused)"},
	} {
		if got := signatures(c.r); got != c.want {
			t.Errorf("signatures(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
