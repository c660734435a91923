package mcpserver_test

import (
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain makes the test binary a sandbox init when re-executed as one,
// and an MCP server on stdio when a test runs it with serveEnv set.
func TestMain(m *testing.M) {
	sandbox.Init()
	if cfg := os.Getenv(serveEnv); cfg != "" {
		os.Exit(serveStdio(cfg))
	}
	os.Exit(m.Run())
}
