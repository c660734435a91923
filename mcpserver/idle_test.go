package mcpserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestIdleSessionClosed: a sandbox session with no call for (a little
// less than) the policy's idle timeout is closed by the server, its patch
// and findings written; the client's next call runs in a new sandbox
// session, whose result says so, and whose records carry the same MCP
// session's id.
func TestIdleSessionClosed(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, strings.Replace(testPolicy, `"toolScopes"`, `"session": {"idleSeconds": 2}, "toolScopes"`, 1))
	var notes syncBuffer
	srv, done, err := build(f.setup, &notes)
	must(t, err)
	defer done()
	cs := memoryClient(t, srv, "in-memory")
	r, _ := run(t, cs, "shell", "sh", "-c", "echo one > /workspace/state; echo x > /workspace/.git:x")
	id := sessionOf(t, r)
	patch := filepath.Join(f.dir, "out", "agent."+id+".patch")
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(notes.String(), "closed (idle)"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no idle close after 20s: %s", notes.String())
		}
	}
	if _, err := os.Stat(patch); err != nil {
		t.Fatal(err)
	}
	// The patch leaves out a path git apply refuses, and the notices say so,
	// a line for the class.
	if !strings.Contains(notes.String(), "it is short: changes: the patch does not carry every change: 1 of 2 changed paths left out (.git:x: ") ||
		!strings.Contains(notes.String(), ": patch: 1 change not in the patch (git): ") {
		t.Errorf("no word of the path left out of the patch: %s", notes.String())
	}
	testutil.CheckNoSandboxLeft(t, id)
	r, res := run(t, cs, "shell", "sh", "-c", "cat /workspace/state 2>&1; true")
	if !strings.Contains(text(r), "was closed after 1s without a call") || !strings.Contains(text(r), patch) ||
		res.Session != id+".2" || !strings.Contains(res.Stdout.Text, "No such file") {
		t.Fatalf("the call after the idle close: %+v\n%s", res, text(r))
	}
	must(t, cs.Close())
	// Close says a patch was short (the MCP server's exit status 73).
	if err := srv.Close(context.Background()); !errors.Is(err, changes.ErrIncomplete) || errors.Is(err, enforcer.ErrAudit) {
		t.Errorf("Close: %v, want changes.ErrIncomplete", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "out", "agent."+id+".2.patch")); err != nil {
		t.Error(err)
	}
	sessions := map[string]bool{}
	for _, ev := range f.events(t, id) {
		sessions[ev.Context.RunID] = true
	}
	if len(sessions) != 2 || !sessions[id] || !sessions[id+".2"] {
		t.Errorf("the MCP session's records are of the sandbox sessions %v", sessions)
	}
	t.Log(notes.String())
}

// TestMaxSessions: past Config.MaxSessions sandbox sessions open at
// once, a call is refused (a tool error, not a protocol error) until a
// client goes.
func TestMaxSessions(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, testPolicy)
	f.MaxSessions = 1
	srv, done, err := build(f.setup, nil)
	must(t, err)
	defer done()
	defer srv.Close(context.Background())
	a, b := memoryClient(t, srv, "a"), memoryClient(t, srv, "b")
	if r, _ := run(t, a, "shell", "sh", "-c", "true"); r.IsError {
		t.Fatalf("the first client: %s", text(r))
	}
	if r, _ := run(t, b, "shell", "sh", "-c", "true"); !r.IsError || !strings.Contains(text(r), "1 sandbox sessions are open") {
		t.Fatalf("a second sandbox session past MaxSessions 1: %s", text(r))
	}
	must(t, a.Close())
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _ := run(t, b, "shell", "sh", "-c", "true"); !r.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the place of the client that went was not given back")
		}
	}
}
