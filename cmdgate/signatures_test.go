package cmdgate_test

import (
	"reflect"
	"testing"

	"github.com/airlock-sandbox/airlock/cmdgate"
)

// TestSignaturesForARefusal: a refusal can show what the tool's allow
// rules accept for the command, in policy order, and nothing for a
// command or tool the policy does not allow.
func TestSignaturesForARefusal(t *testing.T) {
	g := gateFrom(t, `{"toolScopes": {"run_tests": {
		"allow": [{"name": "pytest", "command": "pytest", "argPatterns": [["-v"], ["-v", "-x"]]},
		          {"name": "pytest-k", "command": "pytest", "argPatterns": [["-k"]], "allowExtraArgs": true},
		          {"name": "make", "command": "make"}],
		"escalate": [{"name": "pdb", "command": "pytest", "argPatterns": [["--pdb"]]}]}}}`)
	want := []cmdgate.Signature{
		{Rule: "pytest", Command: "pytest", Args: []string{"-v"}},
		{Rule: "pytest", Command: "pytest", Args: []string{"-v", "-x"}},
		{Rule: "pytest-k", Command: "pytest", Args: []string{"-k"}, ExtraArgs: true},
	}
	if got := g.Signatures("run_tests", "pytest"); !reflect.DeepEqual(got, want) {
		t.Errorf("pytest signatures = %+v, want %+v", got, want)
	}
	if got := g.Signatures("run_tests", "make"); !reflect.DeepEqual(got, []cmdgate.Signature{{Rule: "make", Command: "make", Args: []string{}}}) {
		t.Errorf("make signatures = %+v", got)
	}
	for _, c := range [][2]string{{"run_tests", "git"}, {"nobody", "pytest"}} {
		if got := g.Signatures(c[0], c[1]); got != nil {
			t.Errorf("Signatures(%q, %q) = %+v, want none", c[0], c[1], got)
		}
	}
}

// TestJustificationInDecision: a rule's justification comes with every
// decision the rule takes, and a default denial has none.
func TestJustificationInDecision(t *testing.T) {
	g := gateFrom(t, `{"toolScopes": {"t": {
		"allow": [{"name": "ls", "command": "ls"}],
		"escalate": [{"name": "rm", "command": "rm", "allowExtraArgs": true, "justification": "deleting files needs a person"}],
		"deny": [{"name": "curl", "command": "curl", "allowExtraArgs": true, "justification": "use the fetch tool"}]}}}`)
	for _, c := range []struct {
		command string
		want    string
	}{{"rm", "deleting files needs a person"}, {"curl", "use the fetch tool"}, {"ls", ""}, {"git", ""}} {
		if d := g.Decide("t", c.command, nil, ws); d.Justification != c.want {
			t.Errorf("%s: justification %q, want %q", c.command, d.Justification, c.want)
		}
	}
}
