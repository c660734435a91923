package mcpserver_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/mcpserver"
)

// tsSeen is what testdata/tsclient/client.mjs saw of one call.
type tsSeen struct {
	IsError  bool
	Text     string
	Session  string
	ExitCode int
	Stdout   string
	Refusal  *enforcer.Refusal
	Approval *enforcer.ApprovalUse
}

// tsReport is the TypeScript client's whole report.
type tsReport struct {
	Tools []struct {
		Name            string
		Required        []string
		Properties      []string
		HasOutputSchema bool
		Annotations     map[string]any
	}
	Allowed, Kept, Denied, Approved, Forged, Other, After tsSeen
	Asked                                                 []struct{ Message, ID string }
	Cancelled                                             struct{ Error string }
	CancelledAfterMs, AfterCancelMs                       int64
}

// TestTypeScriptClient runs the official TypeScript SDK's client (Node)
// against the server over stdio and over HTTP: the tools it lists, an
// allowed call, state kept for its next call and not seen by a second
// client, a denial, an escalation approved through elicitation and one
// answered with a forged id, and a call cancelled mid-run after which the
// sandbox goes on. The client's own checks run too: it validates every
// result's structured content against the tool's output schema.
func TestTypeScriptClient(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := filepath.Abs("testdata/tsclient")
	must(t, err)
	node := testutil.RequireNodeModules(t, dir)
	for _, transport := range []string{"stdio", "http", "http-pool"} {
		t.Run(transport, func(t *testing.T) {
			f := newFixture(t, testPolicy)
			if transport == "http-pool" {
				f.Pool = 2 // the same checks, on sandboxes built ahead when they are ready
			}
			cmd := exec.Command(node, filepath.Join(dir, "client.mjs"))
			if transport == "stdio" {
				srv := f.serverCommand(t)
				cmd.Args = append(cmd.Args, "stdio", srv.Path)
				cmd.Args = append(cmd.Args, srv.Args[1:]...)
				cmd.Env = srv.Env
			} else {
				url, token := f.httpServer(t)
				cmd.Args = append(cmd.Args, "http", url)
				cmd.Env = append(os.Environ(), "AIRLOCK_MCP_TOKEN="+token)
			}
			cmd.Dir, cmd.Stderr = dir, os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the TypeScript client failed: %v\n%s", err, out)
			}
			var rep tsReport
			must(t, json.Unmarshal(out, &rep))
			checkTSReport(t, rep)
			evs := f.events(t, rep.Allowed.Session)
			if len(evs) == 0 {
				t.Errorf("no audit records of MCP session %s", rep.Allowed.Session)
			} else if f.Pool > 0 {
				t.Logf("the first client's sandbox session: %s", evs[0].Reason)
			}
		})
	}
}

func checkTSReport(t *testing.T, rep tsReport) {
	t.Helper()
	var names []string
	for _, tl := range rep.Tools {
		names = append(names, tl.Name)
		if tl.Name == "shell" && (!slices.Equal(tl.Required, []string{"command"}) ||
			!slices.Equal(tl.Properties, []string{"approval", "args", "command", "cwd", "timeout"}) || !tl.HasOutputSchema || tl.Annotations["openWorldHint"] != false) {
			t.Errorf("shell as listed: %+v", tl)
		}
	}
	slices.Sort(names)
	if want := []string{mcpserver.ChangesTool, mcpserver.FindingsTool, "read_file", "shell"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if a := rep.Allowed; a.IsError || a.ExitCode != 0 || a.Stdout != "hello\n" || !strings.HasPrefix(a.Session, "mcp-") {
		t.Errorf("allowed: %+v", a)
	}
	if k := rep.Kept; k.Stdout != "ts\n" || k.Session != rep.Allowed.Session {
		t.Errorf("the second call: %+v", k)
	}
	if o := rep.Other; o.Session == rep.Allowed.Session || strings.Contains(o.Stdout, "ts") || !strings.Contains(o.Stdout, "No such file") {
		t.Errorf("a second client sees the first one's sandbox: %+v", o)
	}
	if d := rep.Denied; !d.IsError || d.Refusal == nil || d.Refusal.Retryable || d.Refusal.Rule != "no-shadow" || !strings.Contains(d.Text, "Retryable: no") {
		t.Errorf("denied: %+v", d)
	}
	if a := rep.Approved; a.IsError || a.ExitCode != 0 || a.Approval == nil || !strings.Contains(a.Approval.By, `"ts-sdk-test-a 1"`) {
		t.Errorf("approved: %+v", a)
	}
	if f := rep.Forged; !f.IsError || f.Refusal == nil || !strings.Contains(f.Refusal.Reason, "not its own") || f.ExitCode != enforcer.ExitEscalated {
		t.Errorf("forged: %+v", f)
	}
	if len(rep.Asked) != 2 || !strings.Contains(rep.Asked[0].Message, "Command: cat /etc/hostname") || rep.Asked[0].ID == rep.Asked[1].ID {
		t.Errorf("elicitations: %+v", rep.Asked)
	}
	t.Logf("cancelled %d ms after the call; the next call's result %d ms after the cancel", rep.CancelledAfterMs, rep.AfterCancelMs)
	if rep.Cancelled.Error == "" || rep.After.Stdout != "ts\n" || rep.AfterCancelMs > 10000 {
		t.Errorf("cancel: %+v, then %+v after %d ms", rep.Cancelled, rep.After, rep.AfterCancelMs)
	}
}
