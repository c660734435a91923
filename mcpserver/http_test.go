package mcpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/mcpserver"
)

// TestHTTPClientsApart: two clients at once over the streamable HTTP
// transport, each in a sandbox of its own: what one writes the other never
// sees, though both write the same path.
func TestHTTPClientsApart(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, testPolicy)
	url, token := f.httpServer(t)
	a, b := httpClient(t, url, token, nil), httpClient(t, url, token, nil)
	var wg sync.WaitGroup
	ids := make([]string, 2)
	for i, cs := range []*mcp.ClientSession{a, b} {
		wg.Go(func() {
			r, res := run(t, cs, "shell", "sh", "-c", fmt.Sprintf("test ! -e /workspace/mine && echo %d > /workspace/mine && cat /workspace/mine", i))
			if r.IsError || res.Stdout.Text != fmt.Sprintf("%d\n", i) {
				t.Errorf("client %d: %+v\n%s", i, res, text(r))
			}
			ids[i] = sessionOf(t, r)
		})
	}
	wg.Wait()
	if ids[0] == ids[1] {
		t.Fatalf("two clients, one MCP session %s", ids[0])
	}
	for i, cs := range []*mcp.ClientSession{a, b} {
		if r, res := run(t, cs, "shell", "sh", "-c", "cat /workspace/mine"); res.Stdout.Text != fmt.Sprintf("%d\n", i) || sessionOf(t, r) != ids[i] {
			t.Errorf("client %d reads %q in %s", i, res.Stdout.Text, sessionOf(t, r))
		}
	}
	must(t, a.Close())
	must(t, b.Close())
	for _, id := range ids {
		if evs := f.events(t, id); len(evs) == 0 {
			t.Errorf("no records of %s", id)
		}
	}
}

// TestHTTPGuards: without the bearer token, with a wrong one, from a
// page of another origin, or under a host name other than loopback's
// (DNS rebinding), the endpoint answers no MCP at all.
func TestHTTPGuards(t *testing.T) {
	f := newFixture(t, testPolicy)
	url, token := f.httpServer(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	post := func(auth, origin, host string) int {
		req, err := http.NewRequest("POST", url, strings.NewReader(init))
		must(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	self := strings.TrimSuffix(url, "/")
	for _, c := range []struct {
		name               string
		auth, origin, host string
		want               int
	}{
		{"no token", "", "", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("x", len(token)), "", "", http.StatusUnauthorized},
		{"token of another scheme", "Basic " + token, "", "", http.StatusUnauthorized},
		{"another origin", "Bearer " + token, "https://evil.example", "", http.StatusForbidden},
		{"another origin, no token", "", "http://attacker.test", "", http.StatusForbidden},
		{"rebound host name", "Bearer " + token, "", "attacker.test", http.StatusForbidden},
		{"the token, same origin", "Bearer " + token, self, "", http.StatusOK},
	} {
		if got := post(c.auth, c.origin, c.host); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	if _, err := mcpserver.Listen("0.0.0.0:0", false); err == nil {
		t.Error("Listen took a non-loopback address")
	}
	if _, err := (&mcpserver.Server{}).Handler("short"); err == nil {
		t.Error("Handler took a short token")
	}
}

// TestOutOfBandApproval: a client without elicitation gets the refusal
// that says approval is needed and how; an operator answers the request
// in the store (airlock approve), and the same call with "approval" runs
// once, and not twice.
func TestOutOfBandApproval(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, testPolicy)
	url, token := f.httpServer(t)
	cs := httpClient(t, url, token, nil)
	r, res := run(t, cs, "read_file", "cat", "/etc/hostname")
	ref := res.Refusal
	if !r.IsError || ref == nil || !ref.Retryable || ref.Approval == nil || !strings.Contains(ref.Reason, "declared no form elicitation") {
		t.Fatalf("escalation without elicitation: %+v", ref)
	}
	id := ref.Approval.ID
	if !strings.Contains(text(r), "airlock approve "+id) || !strings.Contains(text(r), `the "approval" argument `+id) {
		t.Errorf("the refusal does not say how:\n%s", text(r))
	}
	store, err := approval.OpenStore(f.Approvals)
	must(t, err)
	must(t, store.Answer(id, approval.Answer{Allow: true, By: "operator uid 0 via airlock approve"}))
	in := map[string]any{"command": "cat", "args": []string{"/etc/hostname"}, "approval": id}
	if r, res := callTool(t, context.Background(), cs, "read_file", in); r.IsError || res.ExitCode != 0 || res.Approval == nil || res.Approval.ID != id {
		t.Fatalf("approved out of band: %+v\n%s", res, text(r))
	}
	if r, res := callTool(t, context.Background(), cs, "read_file", in); !r.IsError || res.ExitCode != enforcer.ExitEscalated {
		t.Fatalf("the approval ran twice: %+v", res)
	}
}

// TestOutOfBandApprovalBoundToCwd: an approval answered out of band is
// bound to the working directory the request showed: the same call with
// the tool's "cwd" argument pointing at a script the agent planted is
// refused, naming the working directory, and does not use the approval
// up; the call as shown then runs once. Before, the planted script ran.
func TestOutOfBandApprovalBoundToCwd(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, `{"toolScopes": {"shell": {
	  "allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
	  "escalate": [{"name": "deploy", "command": "sh", "argPatterns": [["-c", "./deploy.sh"]]}]}}}`)
	must(t, os.WriteFile(filepath.Join(f.Workspace, "deploy.sh"), []byte("#!/bin/sh\necho deployed\n"), 0o755))
	url, token := f.httpServer(t)
	cs := httpClient(t, url, token, nil)
	if r, res := run(t, cs, "shell", "sh", "-c", `printf '#!/bin/sh\necho planted\n' > /tmp/deploy.sh && chmod +x /tmp/deploy.sh`); r.IsError || res.ExitCode != 0 {
		t.Fatalf("planting: %+v\n%s", res, text(r))
	}
	_, res := run(t, cs, "shell", "sh", "-c", "./deploy.sh")
	if res.Refusal == nil || res.Refusal.Approval == nil || res.Refusal.Approval.ID == "" {
		t.Fatalf("escalation: %+v", res)
	}
	id := res.Refusal.Approval.ID
	store, err := approval.OpenStore(f.Approvals)
	must(t, err)
	r, _, err := store.Get(id)
	if err != nil || r.Cwd != "/workspace" {
		t.Fatalf("the request binds working directory %q: %v", r.Cwd, err)
	}
	must(t, store.Answer(id, approval.Answer{Allow: true, By: "operator uid 0 via airlock approve"}))
	in := map[string]any{"command": "sh", "args": []string{"-c", "./deploy.sh"}, "approval": id, "cwd": "/tmp"}
	if r, res := callTool(t, context.Background(), cs, "shell", in); !r.IsError || res.ExitCode != enforcer.ExitEscalated || res.Refusal == nil ||
		!strings.Contains(res.Refusal.Reason, `was given for working directory "/workspace", not "/tmp"`) || strings.Contains(text(r), "planted") {
		t.Fatalf("redeemed with another cwd: %+v %+v\n%s", res, res.Refusal, text(r))
	}
	delete(in, "cwd")
	if r, res := callTool(t, context.Background(), cs, "shell", in); r.IsError || res.ExitCode != 0 || !strings.Contains(text(r), "deployed") {
		t.Fatalf("the call as shown: %+v\n%s", res, text(r))
	}
}

// TestHTTPUnauthorizedNotKept: the connection of a request without the
// token is closed once it is answered. Before, it was kept alive with no
// idle timeout, so that any local process could hold connections without
// end and leave the server none for its clients.
func TestHTTPUnauthorizedNotKept(t *testing.T) {
	f := newFixture(t, testPolicy)
	url, _ := f.httpServer(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	for _, auth := range []string{"", "Authorization: Bearer wrong\r\n"} {
		c, err := net.Dial("tcp", addr)
		must(t, err)
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n%s\r\n{}", addr, auth)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		must(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", resp.StatusCode)
		}
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%q: after the 401 the connection is still open (%v)", auth, err)
		}
	}
}
