package policy_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestWarnsOfPathRules: a deny or escalate rule whose arguments name a
// path is valid, with a warning at that argument saying what the rule
// cannot hold and what keeps a file away; allow rules and rules on plain
// words have none.
func TestWarnsOfPathRules(t *testing.T) {
	src := `{"toolScopes": {"t": {
  "allow": [{"name": "cat", "command": "cat", "argPatterns": [["README.md"]]}],
  "deny": [{"name": "no-env", "command": "cat", "argPatterns": [["-n"], ["-n", ".env"]]},
           {"name": "no-force", "command": "git", "argPatterns": [["push", "--force"]]},
           {"name": "no-key", "command": "grep", "argPatterns": [["--file=secrets/key", "/etc/passwd"]]}],
  "escalate": [{"name": "pub", "command": "less", "argPatterns": [["id_rsa.pub"]]},
               {"name": "pin", "command": "pip", "argPatterns": [["install", "requests==2.31"]]}]
}}}`
	l, err := policy.Parse("p.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`p.json:3:80: toolScopes.t.deny[0].argPatterns[1][1]: deny rule "no-env" names a path, ".env": it holds for every spelling of that path, not for a link`,
		`p.json:5:67: toolScopes.t.deny[2].argPatterns[0][0]: deny rule "no-key" names a path, "--file=secrets/key": `,
		`p.json:6:68: toolScopes.t.escalate[0].argPatterns[0][0]: escalate rule "pub" names a path, "id_rsa.pub": `,
	}
	if len(l.Warnings) != len(want) {
		t.Fatalf("warnings:\n%v\nwant %d", l.Warnings, len(want))
	}
	for i, w := range l.Warnings {
		if got := w.Error(); !strings.HasPrefix(got, want[i]) || !strings.Contains(got, "an option with it attached (-f.env)") ||
			!strings.HasSuffix(got, "\n\thint: to keep a file from the sandbox, leave it out of the workspace and of filesystem.readOnly and readWrite "+
				`(docs/policy.md, "Arguments and paths")`) {
			t.Errorf("warning %d:\n%s\nwant it to start %s", i, got, want[i])
		}
	}
	if ws := policy.Default().Warnings; len(ws) != 0 {
		t.Errorf("the default policy has warnings: %v", ws)
	}
}
