package main

import (
	"os"
	"testing"
)

// TestExitStatuses pins the exit statuses of the command line's contract
// for the cases that need no sandbox.
func TestExitStatuses(t *testing.T) {
	privateKey(t)
	t.Setenv("AIRLOCK_POLICY", "")
	t.Chdir(t.TempDir())
	if err := os.WriteFile("bad.json", []byte(`{"toolScopes": {}, "bogus": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"explain", "--tool", "run_tests", "--", "pytest", "-v"}, exitOK},
		{[]string{"explain", "--tool", "run_tests", "--json", "--", "git", "clone", "x"}, exitOK},
		{[]string{"explain", "--tool", "run_tests"}, exitUsage},
		{[]string{"explain", "--nope"}, exitUsage},
		{[]string{"bogus"}, exitUsage},
		{[]string{"policy", "chek"}, exitUsage},
		{[]string{"policy"}, exitUsage},
		{[]string{"policy", "schema", "extra"}, exitUsage},
		{[]string{"policy", "check"}, exitOK},
		{[]string{"policy", "check", "bad.json"}, exitFailed},
		{[]string{"--policy", "bad.json", "explain", "--tool", "t", "--", "ls"}, exitFailed},
		{[]string{"run", "--tool", "run_tests", "--audit", "a.jsonl", "--", "git", "clone", "x"}, exitDenied},
		{[]string{"--policy", "bad.json", "run", "--tool", "t", "--audit", "a.jsonl", "--", "ls"}, exitSetup},
		{[]string{"--policy", "missing.json", "run", "--tool", "t", "--audit", "a.jsonl", "--", "ls"}, exitSetup},
	} {
		if got := Main(c.args); got != c.want {
			t.Errorf("airlock %q exited %d, want %d", c.args, got, c.want)
		}
	}
}
