package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/mcpserver"
)

// elicitor answers airlock's elicitations the way a test says: accept
// with the id it was given, accept with a forged id, accept with the id
// of an earlier elicitation (a replay), or decline.
type elicitor struct {
	mu    sync.Mutex
	mode  string
	ids   []string // the ids it was asked with, in order
	asked []string // the messages
}

func (e *elicitor) set(mode string) {
	e.mu.Lock()
	e.mode = mode
	e.mu.Unlock()
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	b, _ := jsonMarshal(req.Params.RequestedSchema)
	_ = jsonUnmarshal(b, &schema)
	id, _ := schema.Properties[mcpserver.ElicitID].Default.(string)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ids = append(e.ids, id)
	e.asked = append(e.asked, req.Params.Message)
	answer := map[string]any{mcpserver.ElicitID: id, mcpserver.ElicitApprove: true, mcpserver.ElicitReason: "looks fine"}
	switch e.mode {
	case "decline":
		return &mcp.ElicitResult{Action: "decline"}, nil
	case "forge":
		answer[mcpserver.ElicitID] = "eli-00000000000000000000000000000000"
	case "replay":
		answer[mcpserver.ElicitID] = e.ids[0]
	}
	return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
}

// TestStdioSession drives airlock's MCP server over stdio with the Go
// SDK's client (CommandTransport running the test binary as the server):
// an allowed call, state kept between calls, a denied call, escalations
// approved through elicitation and answered with a forged and a replayed
// id, a declined one, progress, a cancelled call, the session tools, and
// afterwards the patch, the findings and the audit records of the one
// MCP session.
func TestStdioSession(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, testPolicy)
	el := &elicitor{mode: "accept"}
	progressed := make(chan string, 100)
	cs := f.stdioClient(t, &mcp.ClientOptions{ElicitationHandler: el.handle,
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progressed <- r.Params.Message }})

	// An allowed call, and its state kept for the next.
	r, res := run(t, cs, "shell", "sh", "-c", "echo kept > /workspace/state; echo found > /findings/report.txt; echo out; echo err >&2")
	id := sessionOf(t, r)
	if r.IsError || res.ExitCode != 0 || res.Stdout.Text != "out\n" || res.Stderr.Text != "err\n" || !strings.Contains(text(r), "--- stdout (4 bytes) ---\nout\n") {
		t.Fatalf("allowed call: isError %v, %+v\n%s", r.IsError, res, text(r))
	}
	if r, res := run(t, cs, "shell", "sh", "-c", "cat /workspace/state"); r.IsError || res.Stdout.Text != "kept\n" || sessionOf(t, r) != id {
		t.Fatalf("the second call does not see the first one's file: %+v", res)
	}

	// A call a deny rule refuses: an error result with the reason, not
	// retryable, and no other way to the same end suggested.
	r, res = run(t, cs, "read_file", "cat", "/etc/shadow")
	if !r.IsError || res.Refusal == nil || res.Refusal.Retryable || res.Refusal.Rule != "no-shadow" || res.ExitCode != enforcer.ExitDenied {
		t.Fatalf("denied call: isError %v, %+v", r.IsError, res.Refusal)
	}
	for _, want := range []string{"decision deny", `rule "no-shadow"`, "the host's password hashes are never read",
		"Retryable: no. A rule of the policy stops this request on purpose: do not look for another way"} {
		if !strings.Contains(text(r), want) {
			t.Errorf("the denial's text lacks %q:\n%s", want, text(r))
		}
	}
	if res.Refusal.AllowedSignatures != nil || strings.Contains(text(r), "What this tool allows") {
		t.Errorf("a deny rule's refusal shows what the tool allows instead:\n%s", text(r))
	}
	// A call refused by default: what the tool allows instead.
	r, res = run(t, cs, "read_file", "cat", "/etc/passwd")
	if !r.IsError || res.Refusal == nil || res.Refusal.Retryable || res.Refusal.Rule != "" || res.ExitCode != enforcer.ExitDenied {
		t.Fatalf("call denied by default: isError %v, %+v", r.IsError, res.Refusal)
	}
	for _, want := range []string{"Retryable: no. The same command will be refused again", "- cat /workspace/README (exactly) (rule cat)"} {
		if !strings.Contains(text(r), want) {
			t.Errorf("the denial's text lacks %q:\n%s", want, text(r))
		}
	}

	// Escalations: approved through elicitation, it runs once.
	r, res = run(t, cs, "read_file", "cat", "/etc/hostname")
	if r.IsError || res.ExitCode != 0 || res.Approval == nil || !strings.Contains(res.Approval.By, "MCP elicitation") || !strings.Contains(res.Approval.By, id) {
		t.Fatalf("approved escalation: isError %v, %+v\n%s", r.IsError, res.Approval, text(r))
	}
	// The person is shown all the approval is bound to.
	if m := el.asked[0]; !regexp.MustCompile("Tool: read_file\nCommand: cat /etc/hostname\nProgram: /[a-z/]+/cat \\(sha256:[0-9a-f]{64}\\)\n"+
		"Environment: \\(none\\)\nWorking directory: /workspace\nStdin: none\nEgress task: .+\nWorkspace: /.+\nImage: \\(none\\)\n"+
		"Session: mcp-[0-9a-f]+\nPolicy: sha256:[0-9a-f]{64}\nRule: hostname\n").MatchString(m) || !strings.Contains(m, "Request id: "+el.ids[0]) {
		t.Errorf("the elicitation's message:\n%s", m)
	}
	// A forged id and a replayed one get nothing: the request waits,
	// and the refusal says how an operator approves it.
	for _, mode := range []string{"forge", "replay"} {
		el.set(mode)
		r, res = run(t, cs, "read_file", "cat", "/etc/hostname")
		ref := res.Refusal
		if !r.IsError || ref == nil || !ref.Retryable || ref.Approval == nil || !strings.HasPrefix(ref.Approval.ID, "apr-") ||
			!strings.Contains(ref.Reason, "not its own") || res.ExitCode != enforcer.ExitEscalated {
			t.Fatalf("%s: isError %v, %+v", mode, r.IsError, ref)
		}
		if !strings.Contains(text(r), "airlock approve "+ref.Approval.ID) || !strings.Contains(text(r), `"approval" argument`) {
			t.Errorf("%s: the refusal does not say how to approve out of band:\n%s", mode, text(r))
		}
	}
	el.set("decline")
	if r, res = run(t, cs, "read_file", "cat", "/etc/hostname"); !r.IsError || res.Refusal == nil || res.Refusal.Retryable || res.ExitCode != enforcer.ExitDenied {
		t.Fatalf("declined: %+v", res.Refusal)
	}

	// The session tools.
	cr, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ChangesTool, Arguments: map[string]any{}})
	must(t, err)
	var ch mcpserver.Changes
	remarshal(t, cr.StructuredContent, &ch)
	if cr.IsError || ch.Session != id || len(ch.Files) != 1 || ch.Files[0].Path != "state" || !strings.Contains(ch.Patch, "+kept") {
		t.Errorf("changes: %+v\n%s", ch, text(cr))
	}
	fr, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.FindingsTool})
	must(t, err)
	var fi mcpserver.Findings
	remarshal(t, fr.StructuredContent, &fi)
	if fr.IsError || len(fi.Files) != 1 || fi.Files[0].Path != "report.txt" || fi.Kept != filepath.Join(f.Findings, id) {
		t.Errorf("findings: %+v\n%s", fi, text(fr))
	}

	// Progress, then a cancelled call: the step is killed, and the
	// sandbox goes on.
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "sleep", "args": []string{"30"}},
			Meta: mcp.Meta{"progressToken": "sleep-30"}})
		called <- err
	}()
	if m := <-progressed; !strings.Contains(m, "running for") || !strings.Contains(m, "bytes of output") {
		t.Errorf("progress message %q", m)
	}
	start := time.Now()
	cancel()
	if err := <-called; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	r, res = run(t, cs, "shell", "sh", "-c", "cat /workspace/state")
	took := time.Since(start)
	t.Logf("from the cancel to the next call's result: %v", took)
	if r.IsError || res.Stdout.Text != "kept\n" || took > 10*time.Second {
		t.Fatalf("after the cancel, in %v: %+v", took, res)
	}

	// The client goes: the server writes the patch and the findings,
	// and its records are those of one MCP session.
	must(t, cs.Close())
	patch, err := os.ReadFile(filepath.Join(f.dir, "out", "agent."+id+".patch"))
	must(t, err)
	if !strings.Contains(string(patch), "+kept") {
		t.Errorf("patch:\n%s", patch)
	}
	if b, err := os.ReadFile(filepath.Join(f.Findings, id, "report.txt")); err != nil || string(b) != "found\n" {
		t.Errorf("findings: %q %v", b, err)
	}
	testutil.CheckNoSandboxLeft(t, id)
	evs := f.events(t, id)
	count := map[string]int{}
	for _, ev := range evs {
		if ev.Context.Details["session"] != id {
			t.Errorf("record %d has details.session %q", ev.Seq, ev.Context.Details["session"])
		}
		count[string(ev.Kind)+"/"+ev.Context.Event]++
		if ev.Kind == audit.KindResource && ev.Context.Command == "sleep" && ev.Context.WallMs > 10000 {
			t.Errorf("the cancelled sleep ran %d ms", ev.Context.WallMs)
		}
	}
	t.Logf("records of MCP session %s: %v", id, count)
	// Ten calls decided; four escalations asked, two answered (the
	// approval, the decline), two refused (the forged and replayed ids).
	for k, n := range map[string]int{"command/": 10, "command/approval_requested": 4, "command/approval_answered": 2,
		"command/approval_refused": 2, "lifecycle/sandbox_launched": 1, "lifecycle/sandbox_torn_down": 1} {
		if count[k] != n {
			t.Errorf("%d records %s, want %d", count[k], k, n)
		}
	}
}
