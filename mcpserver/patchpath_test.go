package mcpserver_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/mcpserver"
)

func TestPatchPath(t *testing.T) {
	for patch, want := range map[string]string{
		"/o/agent.patch": "/o/agent.ID.patch",
		"/o/agent":       "/o/agent.ID",
		"/o/.patch":      "/o/.patch.ID",
		"/o.d/agent":     "/o.d/agent.ID",
		"agent.x.diff":   "agent.x.ID.diff",
	} {
		if got := mcpserver.PatchPath(patch, "ID"); got != want {
			t.Errorf("PatchPath(%q) = %q, want %q", patch, got, want)
		}
	}
}

// FuzzPatchPath: a session's patch is in the directory the operator
// named, never the named file itself, and two ids never share a path.
func FuzzPatchPath(f *testing.F) {
	for _, s := range []string{"/o/agent.patch", "agent", ".patch", "/a.b/", "x."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		if patch == "" || strings.HasSuffix(patch, "/") {
			return // cmd/airlock takes a file name only
		}
		a, b := mcpserver.PatchPath(patch, "mcp-1"), mcpserver.PatchPath(patch, "mcp-2")
		if a == patch || a == b || filepath.Dir(a) != filepath.Dir(patch) || !strings.Contains(filepath.Base(a), ".mcp-1") {
			t.Errorf("PatchPath(%q): %q and %q", patch, a, b)
		}
	})
}
