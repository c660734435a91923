package policy_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestBrokenPolicyHints is ten policies a person gets wrong on a first
// try, each refused at its line and column with a hint that says what to
// write instead (what `airlock policy check` prints).
func TestBrokenPolicyHints(t *testing.T) {
	const scopes = `"toolScopes": {}, `
	for _, c := range []struct{ name, file, src, want string }{
		{"a URL as an allowlist host", "p.json", `{` + scopes + `"egress": {"taskAllowlist": {"t": ["http://pypi.org"]}}}`,
			`egress.taskAllowlist.t[0]: egress: allowlist entry "http://pypi.org": invalid port "//pypi.org"` +
				"\n\thint: an entry names a host, not a URL: drop \"http://\" and any path, and write \"pypi.org\""},
		{"a URL with a port and a path", "p.json", `{` + scopes + `"egress": {"taskAllowlist": {"t": ["https://user@pypi.org:443/simple"]}}}`,
			`write "pypi.org:443" (the allowlist decides by host and port, never by scheme or path)`},
		{"a host with a path", "p.json", `{` + scopes + `"egress": {"taskAllowlist": {"t": ["pypi.org/simple"]}}}`,
			"\thint: an entry names a host, not a path (/simple): write \"pypi.org\""},
		{"YAML 1.1 yes", "p.yaml", "toolScopes:\n  t:\n    allow:\n      - {name: ls, command: ls, allowExtraArgs: yes}\n",
			"p.yaml:4:49: toolScopes.t.allow[0].allowExtraArgs: expected a boolean, found a string\n\thint: \"yes\" is a string here, not YAML 1.1's true: airlock reads YAML 1.2, where the booleans are true and false; write true"},
		{"YAML 1.1 off", "p.yaml", "toolScopes:\n  t:\n    allow:\n      - {name: ls, command: ls, allowExtraArgs: off}\n",
			"write false"},
		{"a JSON comment", "p.json", "{\n  // the tools\n  \"toolScopes\": {}\n}",
			"p.json:2:3: invalid JSON: invalid character '/'\n\thint: JSON has no comments: remove it, or write the policy in YAML (a .yaml file), where # starts a comment"},
		{"a trailing comma in a list", "p.json", `{` + scopes + `"require": ["landlock",]}`,
			"invalid character ']' looking for beginning of value\n\thint: JSON allows no comma before ]: remove the trailing comma"},
		{"a trailing comma in an object", "p.json", `{"toolScopes": {},}`,
			"p.json:1:19: invalid JSON: invalid character '}' looking for beginning of object key string\n\thint: JSON allows no comma before }: remove the trailing comma"},
		{"a misspelt require", "p.json", `{` + scopes + `"require": ["landlok"]}`,
			"require[0]: unknown mechanism \"landlok\"\n\thint: did you mean \"landlock\"? (known (the controls airlock doctor shows): privileges, userns,"},
		{"a misspelt field", "p.json", `{"toolScopes": {"t": {"allow": [{"name": "ls", "command": "ls", "alowExtraArgs": true}]}}}`,
			"toolScopes.t.allow[0].alowExtraArgs: unknown field \"alowExtraArgs\"\n\thint: did you mean \"allowExtraArgs\"?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.Parse(c.file, []byte(c.src))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n%s\nwant it to hold:\n%s", err, c.want)
			}
		})
	}
	// Every name airlock doctor shows can be required.
	if _, err := policy.Parse("p.json", []byte(`{`+scopes+`"require": ["open-files", "privileges"]}`)); err != nil {
		t.Errorf("require of doctor's open-files and privileges: %v", err)
	}
}
