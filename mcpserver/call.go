package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// maxOutput is how much of each of a command's streams a call's result
// keeps (the rest is counted): a model reads the result whole.
const maxOutput = 256 << 10

// progressEvery is how often a call whose client sent a progress token
// is told how long its command has run and how much it printed.
const progressEvery = time.Second

// MetaSession is the key, in a tool result's _meta, of the MCP session's
// id: the details.session of its audit records.
const MetaSession = "airlock/mcpSession"

// call is the MCP request a step runs for; the Elicitation approver finds
// it in the step's context.
type call struct {
	c   *client
	req *mcp.CallToolRequest
}

type callKey struct{}

// runTool is the handler of the command tool of tool scope tool: one step
// of the client's sandbox session.
func (s *Server) runTool(tool string) mcp.ToolHandlerFor[Input, enforcer.Result] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, enforcer.Result, error) {
		c, err := s.client(req.Session)
		if err != nil {
			return toolResult(enforcer.SetupResult("", "", 1, err), "", err)
		}
		c.begin()
		defer c.end()
		var n atomic.Int64
		out, errs := enforcer.NewCapture(maxOutput), enforcer.NewCapture(maxOutput)
		st := enforcer.StepRequest{Tool: tool, Command: in.Command, Args: in.Args, Cwd: in.Cwd, Approval: in.Approval,
			Timeout: time.Duration(in.Timeout * float64(time.Second)),
			Stdout:  counted{out, &n}, Stderr: counted{errs, &n}, Notices: io.Discard}
		ctx = context.WithValue(ctx, callKey{}, &call{c: c, req: req})
		stop := progress(ctx, req, &n)
		res, note, err := c.exec(ctx, st)
		stop()
		s.lost(c.id, res.AuditError)
		res.Stdout, res.Stderr = out.Output(), errs.Output()
		if res.Refusal != nil && res.Refusal.Approval != nil {
			res.Refusal.Approval.How = mcpHow(res.Refusal.Approval.How)
		}
		r, res, _ := toolResult(res, note, err)
		r.Meta = mcp.Meta{MetaSession: c.id}
		return r, res, nil
	}
}

// exec runs st in the client's sandbox session; one that ended before
// the step began is replaced once by a new one.
func (c *client) exec(ctx context.Context, st enforcer.StepRequest) (enforcer.Result, string, error) {
	var notes []string
	for try := 0; ; try++ {
		sess, note, err := c.sandbox(ctx)
		if note != "" {
			notes = append(notes, note)
		}
		if err != nil {
			return enforcer.SetupResult("", "", 1, err), strings.Join(notes, " "), err
		}
		res, err := sess.Exec(ctx, st)
		if errors.Is(err, enforcer.ErrSessionEnded) && try == 0 {
			continue
		}
		return res, strings.Join(notes, " "), err
	}
}

// counted counts what passes to a capture, for progress.
type counted struct {
	w io.Writer
	n *atomic.Int64
}

func (c counted) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.w.Write(p)
}

// progress tells a client that sent a progress token, every
// progressEvery, how long the call's command has run and how many bytes
// it printed; stop ends it.
func progress(ctx context.Context, req *mcp.CallToolRequest, n *atomic.Int64) (stop func()) {
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				el := time.Since(start)
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: el.Seconds(),
					Message: fmt.Sprintf("running for %s, %d bytes of output so far", el.Round(100*time.Millisecond), n.Load())})
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// mcpHow says how an approval is redeemed in MCP terms: the tool's
// "approval" argument, not the command line's --approval flag.
func mcpHow(how string) string {
	how = strings.ReplaceAll(how, "without --approval", `without the "approval" argument`)
	return strings.ReplaceAll(how, "with --approval ", `with the "approval" argument `)
}

// toolResult is a command tool's result for res: an error result when
// airlock refused the command, could not run it or could not record it (a
// command that ran and failed is a result, not an error), with text for
// the model.
func toolResult(res enforcer.Result, note string, err error) (*mcp.CallToolResult, enforcer.Result, error) {
	isErr := err != nil || res.Refusal != nil || res.Error != "" || res.EscapeSuspected != "" || res.AuditError != ""
	text := describeResult(res, err)
	if note != "" {
		text = note + "\n" + text
	}
	return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, res, nil
}

// describeResult is a result in words for the model: airlock's own lines
// first, then the command's output.
func describeResult(res enforcer.Result, err error) string {
	var b strings.Builder
	switch {
	case res.Refusal != nil:
		writeRefusal(&b, res.Refusal)
		return b.String()
	case res.ExitCode == enforcer.ExitSetup && res.Error != "":
		fmt.Fprintf(&b, "airlock could not run the command: %s\n", res.Error)
		return b.String()
	case res.ExitCode == enforcer.ExitSetup && err != nil:
		fmt.Fprintf(&b, "airlock could not run the command: %v\n", err)
		return b.String()
	}
	fmt.Fprintf(&b, "exit code %d", res.ExitCode)
	switch {
	case res.KilledBy != nil:
		fmt.Fprintf(&b, ": %s", res.KillReason)
	case res.Interrupted:
		b.WriteString(": interrupted (the call was cancelled); every process of the step was killed, the sandbox goes on")
	case res.Signal != 0:
		fmt.Fprintf(&b, " (signal %d)", res.Signal)
	}
	fmt.Fprintf(&b, "; %d ms\n", res.WallMs)
	if res.Error != "" {
		fmt.Fprintf(&b, "airlock: %s\n", res.Error)
	}
	if res.AuditError != "" {
		fmt.Fprintf(&b, "airlock: the audit log could not record this command's run: %s\n", res.AuditError)
	}
	if res.EscapeSuspected != "" {
		fmt.Fprintf(&b, "airlock: escape suspected: %s; this MCP session runs nothing more\n", res.EscapeSuspected)
	}
	for _, e := range res.Egress {
		if e.Decision != "allow" {
			fmt.Fprintf(&b, "airlock: egress refused %s port %d: %s\n", e.Host, e.Port, e.Reason)
		}
	}
	for _, o := range []struct {
		name string
		out  *enforcer.Output
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if o.out == nil || o.out.Bytes == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s (%d bytes", o.name, o.out.Bytes)
		if o.out.Truncated {
			fmt.Fprintf(&b, ", the first %d kept", len(o.out.Text))
		}
		b.WriteString(") ---\n")
		b.WriteString(o.out.Text)
		if !strings.HasSuffix(o.out.Text, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// writeRefusal is a refusal for the model: what refused it, whether a
// retry can help, what would pass, and how to get an approval.
func writeRefusal(b *strings.Builder, r *enforcer.Refusal) {
	fmt.Fprintf(b, "airlock refused this command (%s gate, decision %s", r.Gate, r.Decision)
	if r.Rule != "" {
		fmt.Fprintf(b, ", rule %q", r.Rule)
	}
	fmt.Fprintf(b, "): %s\n", r.Reason)
	if r.Justification != "" {
		fmt.Fprintf(b, "The policy says: %s\n", r.Justification)
	}
	switch {
	case r.Retryable:
		b.WriteString("Retryable: yes, once a person approves it; the same command is escalated again until then.\n")
	case r.Rule != "":
		b.WriteString("Retryable: no. A rule of the policy stops this request on purpose: do not look for another way to do the same; if the task needs it, ask the operator.\n")
	default:
		b.WriteString("Retryable: no. The same command will be refused again; only a change of command (or of policy) can help.\n")
	}
	if len(r.AllowedSignatures) > 0 {
		b.WriteString("What this tool allows for the command:\n")
		for _, s := range r.AllowedSignatures {
			line := termtext.Argv(append([]string{s.Command}, s.Args...))
			if s.ExtraArgs {
				line += " … (further arguments allowed)"
			} else {
				line += " (exactly)"
			}
			fmt.Fprintf(b, "- %s (rule %s)\n", line, s.Rule)
		}
	}
	if a := r.Approval; a != nil {
		if a.ID != "" {
			fmt.Fprintf(b, "Approval request: %s", a.ID)
			if a.Expires != nil {
				fmt.Fprintf(b, " (expires %s)", a.Expires.UTC().Format(time.RFC3339))
			}
			b.WriteString(". ")
		}
		fmt.Fprintf(b, "How to get it approved: %s.\n", strings.TrimSuffix(a.How, "."))
	}
}
