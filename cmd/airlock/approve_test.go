package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/airlock-sandbox/airlock/approval"
)

// approvalStore opens the script's store, the one airlock approve finds
// under the script's $XDG_STATE_HOME (this code runs in the test process,
// whose environment is not the script's).
func approvalStore(ts *testscript.TestScript) *approval.Store {
	dir := filepath.Join(ts.Getenv("XDG_STATE_HOME"), "airlock", "approvals")
	ts.Check(os.MkdirAll(dir, 0o700))
	s, err := approval.OpenStore(dir)
	ts.Check(err)
	return s
}

// scriptRequest reads "[-q] SESSION TOOL ARGV..." (with -q every argument
// is Go-quoted, to write bytes a script cannot) into a request.
func scriptRequest(ts *testscript.TestScript, args []string) approval.Request {
	quoted := len(args) > 0 && args[0] == "-q"
	if quoted {
		args = args[1:]
	}
	if len(args) < 3 {
		ts.Fatalf("want [-q] SESSION TOOL ARGV...")
	}
	if quoted {
		for i, a := range args {
			u, err := strconv.Unquote(a)
			ts.Check(err)
			args[i] = u
		}
	}
	return approval.Request{Session: args[0], Tool: args[1], Argv: args[2:], PolicyDigest: "sha256:script",
		Program: "/usr/bin/prog", ProgramDigest: "sha256:prog", Env: []string{"GIT_TRACE=1"}, Cwd: "/workspace/sub", Stdin: approval.StdinNone, Task: "vcs",
		Rule: "escalate-rule", Reason: "matched an escalate rule: needs human approval", Justification: "pushes are reviewed"}
}

// cmdMkApproval makes a pending request, as an escalated command would,
// and sets the variable VAR to its id ("mkapproval VAR [-q] SESSION TOOL ARGV...").
func cmdMkApproval(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: mkapproval VAR [-q] SESSION TOOL ARGV...")
	}
	r, err := approvalStore(ts).Create(scriptRequest(ts, args[1:]), 0)
	ts.Check(err)
	ts.Setenv(args[0], r.ID)
}

// cmdPendingID sets the variable VAR to the id of the one pending request
// of the script's store, which an escalated command made ("pendingid VAR").
func cmdPendingID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pendingid VAR")
	}
	list, err := approvalStore(ts).List()
	ts.Check(err)
	if len(list) != 1 {
		ts.Fatalf("%d pending requests, want 1", len(list))
	}
	ts.Setenv(args[0], list[0].ID)
}

// cmdRedeem redeems an approval for a command, as `session exec
// --approval ID` will ("redeem ID [-q] SESSION TOOL ARGV..."); the refusal
// is printed on stderr.
func cmdRedeem(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: redeem ID [-q] SESSION TOOL ARGV...")
	}
	_, a, err := approvalStore(ts).Redeem(args[0], scriptRequest(ts, args[1:]))
	if err != nil {
		fmt.Fprintf(ts.Stderr(), "refused: %v\n", err)
		if !neg {
			ts.Fatalf("redeem: %v", err)
		}
		return
	}
	if neg {
		ts.Fatalf("redeem: approved by %s, want a refusal", a.By)
	}
}

// TestApproveExitStatuses pins approve's exit statuses.
func TestApproveExitStatuses(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()+"/state")
	dir, err := approval.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	s, err := approval.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Create(approval.Request{Session: "s", Tool: "t", Argv: []string{"ls"}, PolicyDigest: "d",
		Program: "/bin/ls", ProgramDigest: "sha256:ls", Cwd: "/workspace", Stdin: approval.StdinNone, Task: "t"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"approve"}, exitUsage},
		{[]string{"approve", "a", "b"}, exitUsage},
		{[]string{"approve", "--list", r.ID}, exitUsage},
		{[]string{"approve", "--list", "--deny"}, exitUsage},
		{[]string{"approve", r.ID, "--json"}, exitUsage},
		{[]string{"approve", "--list"}, exitOK},
		{[]string{"approve", "--list", "--json"}, exitOK},
		{[]string{"approve", "apr-00000000000000000000000000000000"}, exitFailed},
		{[]string{"approve", "../../key"}, exitFailed},
		{[]string{"approve", r.ID, "--deny"}, exitOK},
		{[]string{"approve", r.ID}, exitFailed},
	} {
		if got := Main(c.args); got != c.want {
			t.Errorf("airlock %q exited %d, want %d", c.args, got, c.want)
		}
	}
	if _, a, err := s.Get(r.ID); err != nil || a == nil || a.Allow {
		t.Errorf("the first answer, a denial, was not kept: %+v, %v", a, errors.Unwrap(err))
	}
}
