package mcpserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// poolPolicy has a shell, and the test binary as the agent's code, to ask
// the proxy for a destination it refuses.
const poolPolicy = `{
  "toolScopes": {
    "shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}]},
    "agent_code": {"allow": [{"name": "payload", "command": "/.airlock/self", "argPatterns": [["payload"]], "allowExtraArgs": true}]}
  }
}`

// pooledClient connects Go SDK clients over streamable HTTP to the server
// at url until one's first call, a shell step of script, runs on a
// sandbox built ahead (the pool builds in the background: a client served
// before one is ready is opened cold and let go); it returns that client,
// its MCP session id and the step's output.
func (f *fixture) pooledClient(t *testing.T, url, token, script string) (*mcp.ClientSession, string, string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
		c, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-pool-test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
		must(t, err)
		r, res := run(t, c, "shell", "sh", "-c", script)
		if r.IsError || res.ExitCode != 0 {
			c.Close()
			t.Fatalf("first call: %s %+v", text(r), res)
		}
		id := sessionOf(t, r)
		if evs := f.events(t, id); len(evs) > 0 && evs[0].Context.Event == audit.EventSandboxLaunched && strings.Contains(evs[0].Reason, "built ahead") {
			return c, id, res.Stdout.Text
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("no client's sandbox session was opened on a sandbox built ahead in 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPoolFresh serves MCP sessions one after another, over streamable
// HTTP to the official Go SDK's client, from a server with a pool: each one's sandbox
// session is opened on a sandbox built ahead, and nothing of the one before
// is visible to the next: its files in /tmp and /workspace, the process it
// left running, its proxy's refusals, its audit context; when the server
// closes, nothing of its pool is left.
func TestPoolFresh(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, poolPolicy)
	f.Pool = 1
	// Last of the cleanups: the server's Close tore down the sandbox
	// built ahead and not handed out.
	before := testutil.EmptyCgroups("sandbox-pool-")
	t.Cleanup(func() { testutil.CheckNoEmptyCgroupLeft(t, "sandbox-pool-", before) })
	url, token := f.httpServer(t)
	first, id1, _ := f.pooledClient(t, url, token, `echo one > /tmp/mark; echo one > /workspace/mark; sleep 1000 & echo $! > /tmp/pid`)
	r, res := run(t, first, "agent_code", sandbox.SelfPath, "payload", "http-get", "http://not-allowed.example-corp.net/")
	if r.IsError && res.ExitCode != 0 || len(res.Egress) == 0 || res.Egress[0].Decision != "deny" {
		t.Fatalf("the first session's proxy did not refuse: %s %+v", text(r), res)
	}
	must(t, first.Close())

	second, id2, got := f.pooledClient(t, url, token, `ls -A /tmp /workspace; for p in /proc/[0-9]*; do cat $p/comm; done`)
	defer second.Close()
	if id1 == id2 {
		t.Fatalf("both clients are MCP session %s", id1)
	}
	for _, leaked := range []string{"mark", "pid", "sleep"} {
		if strings.Contains(got, leaked) {
			t.Errorf("the second session sees %q of the first: %q", leaked, got)
		}
	}
	if !strings.Contains(got, "README") {
		t.Errorf("the second session has no copy of the workspace: %q", got)
	}
	r, res = run(t, second, "shell", "sh", "-c", "true")
	if r.IsError || len(res.Egress) != 0 || res.Step != 2 {
		t.Errorf("the second session's step has another's state: %s %+v", text(r), res)
	}
	for _, ev := range f.events(t, id2) {
		if strings.Contains(ev.Reason, id1) || strings.Contains(ev.Reason, "not-allowed.example-corp.net") {
			t.Errorf("the second session's record carries the first's: %+v", ev)
		}
	}
	must(t, second.Close())
}
