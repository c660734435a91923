package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// initialize opens an MCP session over HTTP as curl would, with an
// initialize request and nothing after it, and returns the status, the
// session's id and the body.
func initialize(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// awaitFreed waits for MCP session id's place to be given back, for at
// most 20 seconds (a place given back is given back by a goroutine).
func awaitFreed(t *testing.T, srv *mcpserver.Server, id, why string) {
	t.Helper()
	ch := srv.Freed(id)
	if ch == nil {
		return // already given back
	}
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no place was given back", why)
	}
}

// TestHTTPMaxClients: 300 clients with the token open MCP sessions that
// only initialize, all at once. The server holds Config.MaxClients of
// them and answers the rest 503 with a JSON-RPC error that says why,
// holding nothing for them; a session's place is given back when it is
// deleted, and when the server closes. Before, every one was held until
// the idle timeout (3,000 grew the server by 90 MiB) and none refused.
func TestHTTPMaxClients(t *testing.T) {
	const bound, tries = 4, 300
	f := newFixture(t, testPolicy)
	f.MaxClients = bound
	srv, url, token := f.httpServerOf(t)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     []string
		refusal string
		codes   = map[int]int{}
	)
	for range tries {
		wg.Go(func() {
			code, id, body := initialize(t, url, token)
			mu.Lock()
			defer mu.Unlock()
			codes[code]++
			if code == http.StatusOK {
				ids = append(ids, id)
			} else {
				refusal = body
			}
		})
	}
	wg.Wait()
	if codes[http.StatusOK] != bound || codes[http.StatusServiceUnavailable] != tries-bound {
		t.Fatalf("statuses %v: want %d times 200 and the rest 503", codes, bound)
	}
	if n := srv.MCPSessions(); n != bound {
		t.Fatalf("the server holds %d MCP sessions, want %d", n, bound)
	}
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(refusal), &rpc); err != nil || rpc.Error.Code != -32000 ||
		!strings.Contains(rpc.Error.Message, "4 MCP sessions are open, as many as this server holds (--max-clients)") {
		t.Errorf("the refusal is not a JSON-RPC error that says why: %s (%v)", refusal, err)
	}
	// A Go SDK client is refused too, at once.
	c := mcp.NewClient(&mcp.Implementation{Name: "one-too-many", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	if cs, err := c.Connect(context.Background(), tr, nil); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		if cs != nil {
			cs.Close()
		}
		t.Errorf("a client past the bound connected (%v)", err)
	}

	freed := srv.Freed(ids[0])
	req, err := http.NewRequest("DELETE", url, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", ids[0])
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	// The DELETE is answered once the place is back: the next opens at once.
	select {
	case <-freed:
	default:
		t.Error("the DELETE was answered before its place was given back")
	}
	if code, _, body := initialize(t, url, token); code != http.StatusOK {
		t.Fatalf("an initialize right after a DELETE: status %d: %s", code, body)
	}
	if n := srv.MCPSessions(); n != bound {
		t.Errorf("the server holds %d MCP sessions, want %d", n, bound)
	}
	must(t, srv.Close(context.Background()))
	if n := srv.MCPSessions(); n != 0 {
		t.Errorf("the closed server holds %d MCP sessions", n)
	}
}

// TestHTTPMaxClientsIdle: an MCP session that only initialized ends at
// the policy's idle timeout like any other, and its place is given back.
func TestHTTPMaxClientsIdle(t *testing.T) {
	f := newFixture(t, strings.Replace(testPolicy, `"toolScopes"`, `"session": {"idleSeconds": 1}, "toolScopes"`, 1))
	f.MaxClients = 2
	srv, url, token := f.httpServerOf(t)
	var ids []string
	for range 2 {
		code, id, body := initialize(t, url, token)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		ids = append(ids, id)
	}
	if code, _, _ := initialize(t, url, token); code != http.StatusServiceUnavailable {
		t.Fatalf("a third MCP session past MaxClients 2: status %d", code)
	}
	start := time.Now()
	awaitFreed(t, srv, ids[0], "after the idle timeout")
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Errorf("a place was given back after %s, before the idle timeout", el)
	}
	if code, _, body := initialize(t, url, token); code != http.StatusOK {
		t.Fatalf("an initialize after the idle timeout: status %d: %s", code, body)
	}
	if n := srv.MCPSessions(); n > 2 {
		t.Errorf("the server holds %d MCP sessions, past MaxClients 2", n)
	}
}
