package cmdgate_test

import (
	"strconv"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// pathPolicy denies and escalates by file arguments, beside allow rules
// that let the same commands run with anything else.
const pathPolicy = `{"toolScopes": {"t": {
	"allow": [{"name": "cat", "command": "cat", "allowExtraArgs": true},
	          {"name": "less", "command": "less", "allowExtraArgs": true},
	          {"name": "grep", "command": "grep", "allowExtraArgs": true},
	          {"name": "rm", "command": "rm", "allowExtraArgs": true},
	          {"name": "head-readme", "command": "head", "argPatterns": [["README.md"]]}],
	"deny": [{"name": "no-env", "command": "cat", "argPatterns": [[".env"]], "allowExtraArgs": true},
	         {"name": "no-key", "command": "grep", "argPatterns": [["--file=secrets/key"]], "allowExtraArgs": true},
	         {"name": "no-rm-root", "command": "rm", "argPatterns": [["-rf", "/"]], "allowExtraArgs": true}],
	"escalate": [{"name": "env-ask", "command": "less", "argPatterns": [["/workspace/.env"]]}]
}}}`

// TestDenyHoldsForEverySpelling: a deny or escalate rule naming a file
// argument holds for every lexical spelling of that file from the step's
// working directory, with a relative rule taken from that directory and
// an absolute one the same wherever the step runs; other files, and
// allow rules, are compared as written.
func TestDenyHoldsForEverySpelling(t *testing.T) {
	g := gateFrom(t, pathPolicy)
	const (
		noEnv  = `"cat" matched deny rule "no-env" of tool "t"`
		catOK  = `"cat" matched allow rule "cat" of tool "t"`
		envAsk = `"less" matched escalate rule "env-ask" of tool "t": needs human approval`
		lessOK = `"less" matched allow rule "less" of tool "t"`
		noKey  = `"grep" matched deny rule "no-key" of tool "t"`
		grepOK = `"grep" matched allow rule "grep" of tool "t"`
		noRoot = `"rm" matched deny rule "no-rm-root" of tool "t"`
		rmOK   = `"rm" matched allow rule "rm" of tool "t"`
		noSig  = `"head" is in the allowlist of tool "t" but its arguments match no signature: deny by default`
	)
	sub := ws + "/sub"
	for _, c := range []struct {
		dir, command string
		args         []string
		verdict      decision.Verdict
		reason, rule string
	}{
		// The relative rule ".env", from the workspace.
		{ws, "cat", []string{".env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"./.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"/workspace/.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"x/../.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{".//.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"sub/../.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"./sub/./../.env", "more"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"/workspace//.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"//workspace/./.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"../workspace/.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{"/../workspace/.env"}, decision.Deny, noEnv, "no-env"},
		{ws, "cat", []string{".env/"}, decision.Deny, noEnv, "no-env"},
		// ... and other files, which it does not name.
		{ws, "cat", []string{".env.bak"}, decision.Allow, catOK, "cat"},
		{ws, "cat", []string{"sub/.env"}, decision.Allow, catOK, "cat"},
		{ws, "cat", []string{"../.env"}, decision.Allow, catOK, "cat"}, // /.env
		{ws, "cat", []string{""}, decision.Allow, catOK, "cat"},
		{ws, "cat", []string{"."}, decision.Allow, catOK, "cat"},
		// From another working directory, ".env" is the file there.
		{sub, "cat", []string{".env"}, decision.Deny, noEnv, "no-env"},
		{sub, "cat", []string{"./.env"}, decision.Deny, noEnv, "no-env"},
		{sub, "cat", []string{"/workspace/sub/.env"}, decision.Deny, noEnv, "no-env"},
		{sub, "cat", []string{"../sub/.env"}, decision.Deny, noEnv, "no-env"},
		{sub, "cat", []string{"x/../.env"}, decision.Deny, noEnv, "no-env"},
		{sub, "cat", []string{"../.env"}, decision.Allow, catOK, "cat"},
		{sub, "cat", []string{"/workspace/.env"}, decision.Allow, catOK, "cat"},
		// The absolute rule "/workspace/.env", from anywhere.
		{ws, "less", []string{".env"}, decision.Escalate, envAsk, "env-ask"},
		{ws, "less", []string{"./.env"}, decision.Escalate, envAsk, "env-ask"},
		{ws, "less", []string{"x/../.env"}, decision.Escalate, envAsk, "env-ask"},
		{ws, "less", []string{".//.env"}, decision.Escalate, envAsk, "env-ask"},
		{ws, "less", []string{"sub/../.env"}, decision.Escalate, envAsk, "env-ask"},
		{ws, "less", []string{"/workspace/.env/."}, decision.Escalate, envAsk, "env-ask"},
		{sub, "less", []string{"../.env"}, decision.Escalate, envAsk, "env-ask"},
		{sub, "less", []string{"./../.env"}, decision.Escalate, envAsk, "env-ask"},
		{sub, "less", []string{"x/../../.env"}, decision.Escalate, envAsk, "env-ask"},
		{"/", "less", []string{"workspace/.env"}, decision.Escalate, envAsk, "env-ask"},
		{sub, "less", []string{".env"}, decision.Allow, lessOK, "less"}, // /workspace/sub/.env
		{ws, "less", []string{".env", "more"}, decision.Allow, lessOK, "less"},
		// NAME=VALUE: the value is a path.
		{ws, "grep", []string{"--file=secrets/key"}, decision.Deny, noKey, "no-key"},
		{ws, "grep", []string{"--file=./secrets/key", "x"}, decision.Deny, noKey, "no-key"},
		{ws, "grep", []string{"--file=/workspace/secrets//key"}, decision.Deny, noKey, "no-key"},
		{sub, "grep", []string{"--file=../secrets/key"}, decision.Allow, grepOK, "grep"}, // the rule's is sub/secrets/key
		{sub, "grep", []string{"--file=/workspace/sub/secrets/key"}, decision.Deny, noKey, "no-key"},
		{ws, "grep", []string{"--file=secrets/key2"}, decision.Allow, grepOK, "grep"},
		{ws, "grep", []string{"--files=secrets/key"}, decision.Allow, grepOK, "grep"},
		{ws, "grep", []string{"--file="}, decision.Allow, grepOK, "grep"},
		// An absolute path with no working directory in it.
		{ws, "rm", []string{"-rf", "/"}, decision.Deny, noRoot, "no-rm-root"},
		{ws, "rm", []string{"-rf", "//"}, decision.Deny, noRoot, "no-rm-root"},
		{ws, "rm", []string{"-rf", "/."}, decision.Deny, noRoot, "no-rm-root"},
		{ws, "rm", []string{"-rf", "/workspace/.."}, decision.Deny, noRoot, "no-rm-root"},
		{ws, "rm", []string{"-rf", ".."}, decision.Deny, noRoot, "no-rm-root"},
		{sub, "rm", []string{"-rf", "../.."}, decision.Deny, noRoot, "no-rm-root"},
		{ws, "rm", []string{"./-rf", "/"}, decision.Deny, noRoot, "no-rm-root"}, // wider than rm reads it: deny errs wide
		{ws, "rm", []string{"-rf", "./"}, decision.Allow, rmOK, "rm"},
		{ws, "rm", []string{"-r", "-f", "/"}, decision.Allow, rmOK, "rm"}, // options are not paths: see docs/policy.md
		// Allow rules compare as written.
		{ws, "head", []string{"README.md"}, decision.Allow, `"head" matched allow rule "head-readme" of tool "t"`, "head-readme"},
		{ws, "head", []string{"./README.md"}, decision.Deny, noSig, ""},
		{ws, "head", []string{"/workspace/README.md"}, decision.Deny, noSig, ""},
	} {
		d := g.Decide("t", c.command, c.args, c.dir)
		if d.Verdict != c.verdict || d.Reason != c.reason || d.Rule != c.rule {
			t.Errorf("in %s: %s %q\n got  %s %q rule %q\n want %s %q rule %q", c.dir, c.command, c.args, d.Verdict, d.Reason, d.Rule, c.verdict, c.reason, c.rule)
		}
	}
}

// TestWorkingDirectoryMustBeClean: a working directory the gate cannot
// take relative arguments from is a denial, whatever the command.
func TestWorkingDirectoryMustBeClean(t *testing.T) {
	g := gateFrom(t, pathPolicy)
	for _, dir := range []string{"", "workspace", "./x", "/workspace/", "/workspace/../etc", "/workspace//sub", "/work\x00space"} {
		d := g.Decide("t", "cat", []string{"README.md"}, dir)
		if want := `the working directory ` + strconv.Quote(dir) + ` is not a clean absolute path, or has a NUL byte: deny`; d.Verdict != decision.Deny || d.Reason != want {
			t.Errorf("dir %q: %s %q, want deny %q", dir, d.Verdict, d.Reason, want)
		}
	}
}
