package mcpserver_test

import (
	"context"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// BenchmarkToolCall is an allowed tool call's round trip through an
// in-memory transport (no process, no pipe): the SDK's JSON both ways
// and its check against the output schema, the step itself; beside
// bench/session's library-step it shows what MCP adds in the process.
func BenchmarkToolCall(b *testing.B) {
	testutil.RequireRoot(b)
	f := newFixture(b, `{"toolScopes": {"bench": {"allow": [{"name": "true", "command": "/bin/true"}]}}}`)
	srv, done, err := build(f.setup, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer done()
	defer srv.Close(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	p := &mcp.CallToolParams{Name: "bench", Arguments: map[string]any{"command": "/bin/true"}}
	for b.Loop() {
		r, err := cs.CallTool(context.Background(), p)
		if err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}
