package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/mcpserver"
)

// TestToolsList: one MCP tool per tool scope, of the same name, with the
// input schema (command, args, timeout under the tool's wall clock, cwd,
// approval), the result contract as output schema, a description made of
// the scope's rules and justifications, and the annotations the scope and
// the task let airlock know; and the two session tools.
func TestToolsList(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, testPolicy)
	cs := f.stdioClient(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	must(t, err)
	var names []string
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		tools[tl.Name] = tl
	}
	slices.Sort(names)
	if want := []string{mcpserver.ChangesTool, mcpserver.FindingsTool, "read_file", "shell"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	rf := tools["read_file"]
	for _, want := range []string{`tool "read_file"`, "- cat /workspace/README | cat /tmp/note (rule cat: reads the project's files)",
		"cat /etc/hostname (rule hostname: names the host: a person decides)", "cat /etc/shadow (rule no-shadow: the host's password hashes are never read)",
		"Needs a person's approval", "Denied", "Network: none", "10s wall clock"} {
		if !strings.Contains(rf.Description, want) {
			t.Errorf("read_file's description lacks %q:\n%s", want, rf.Description)
		}
	}
	var in struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional *bool                      `json:"additionalProperties"`
	}
	remarshal(t, tools["shell"].InputSchema, &in)
	if in.Type != "object" || !slices.Equal(in.Required, []string{"command"}) || len(in.Properties) != 5 {
		t.Errorf("shell's input schema: %+v", in)
	}
	var timeout struct{ Maximum float64 }
	must(t, json.Unmarshal(in.Properties["timeout"], &timeout))
	if timeout.Maximum != 60 {
		t.Errorf("shell's timeout maximum %v, want its wallSeconds 60", timeout.Maximum)
	}
	var out, want map[string]any
	remarshal(t, rf.OutputSchema, &out)
	must(t, json.Unmarshal(enforcer.ResultSchema(), &want))
	if a, b := mustJSON(t, out), mustJSON(t, want); a != b {
		t.Errorf("read_file's output schema is not the result contract's:\n%s", a)
	}
	a := rf.Annotations
	if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("read_file's annotations %+v: want not read-only, not destructive (no writable host path), closed world (no egress task)", a)
	}
	if a := tools[mcpserver.ChangesTool].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("%s is not read-only: %+v", mcpserver.ChangesTool, a)
	}
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	must(t, err)
	must(t, json.Unmarshal(b, to))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}
