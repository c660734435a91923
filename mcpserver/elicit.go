package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// Elicitation is the approval.Approver of an Enforcer served by a Server:
// it asks the person at the MCP client through elicitation (a form) to
// approve an escalated command once, showing all the approval is bound
// to (approval.Request.Bound: the tool, the exact argv, the program and
// its digest, the environment, working directory and stdin, and the
// rest), the rule, the reason and the policy's justification. The answer
// counts only when it carries the request id minted for that one question
// (ElicitID) and approves it explicitly; anything else is no answer, and
// the refusal says how an operator approves the request out of band
// (`airlock approve`). A client that declared no form elicitation is not
// asked. Its trust model is in docs/mcp.md.
//
// Set it as enforcer.Options.Approver; it answers only the escalations of
// a Server's tool calls (it finds the call in the step's context).
type Elicitation struct{}

// The fields of the elicitation's form.
const (
	ElicitID      = "requestId" // the request id, as minted; prefilled
	ElicitApprove = "approve"   // true to run the command once; false by default
	ElicitReason  = "reason"    // the person's own words, optional
)

// maxReason bounds the person's reason (approval.Answer.Reason's bound).
const maxReason = 1024

// Approve asks the person at the client of the call in ctx.
func (Elicitation) Approve(ctx context.Context, r approval.Request) (approval.Answer, error) {
	cl, _ := ctx.Value(callKey{}).(*call)
	if cl == nil {
		return approval.Answer{}, errors.New("no MCP client asked for this command, so no one can be asked through elicitation")
	}
	return cl.elicit(ctx, r)
}

// elicit asks the person at cl's client about r.
func (cl *call) elicit(ctx context.Context, r approval.Request) (approval.Answer, error) {
	ss := cl.req.Session
	if p := ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil ||
		(p.Capabilities.Elicitation.Form == nil && p.Capabilities.Elicitation.URL != nil) {
		return approval.Answer{}, fmt.Errorf("the MCP client (%s) cannot ask a person: it declared no form elicitation", cl.c.name)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := "eli-" + hex.EncodeToString(b[:])
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: elicitMessage(r, id), RequestedSchema: elicitSchema(id)})
	if err != nil {
		return approval.Answer{}, fmt.Errorf("asking through elicitation %s: %w", id, err)
	}
	by := fmt.Sprintf("a person through MCP elicitation %s of %s in MCP session %s", id, cl.c.name, cl.c.id)
	switch res.Action {
	case "decline":
		return approval.Answer{By: by, Reason: "declined"}, nil
	case "accept":
	default:
		return approval.Answer{}, fmt.Errorf("the person closed elicitation %s without answering it (%s)", id, termtext.Clip(res.Action, 32))
	}
	got, _ := res.Content[ElicitID].(string)
	if subtle.ConstantTimeCompare([]byte(got), []byte(id)) != 1 {
		return approval.Answer{}, fmt.Errorf("the answer to elicitation %s names request id %q, not its own: "+
			"an answer is bound to the one request it was asked for and counts once (forged, replayed or another request's answer); nothing was approved",
			id, termtext.Clip(got, 48))
	}
	reason, _ := res.Content[ElicitReason].(string)
	if len(reason) > maxReason || strings.ContainsFunc(reason, unicode.IsControl) {
		return approval.Answer{}, fmt.Errorf("the answer to elicitation %s has a reason of over %d bytes or with control characters", id, maxReason)
	}
	ok, _ := res.Content[ElicitApprove].(bool)
	if !ok {
		reason = strings.TrimSpace("not approved " + reason)
	}
	return approval.Answer{Allow: ok, By: by, Reason: reason, At: time.Now()}, nil
}

// elicitMessage is what the person is shown.
func elicitMessage(r approval.Request, id string) string {
	var b strings.Builder
	b.WriteString("An AI agent asks airlock to run a command that its policy says needs a person's approval.\n\n")
	for _, f := range r.Bound() {
		fmt.Fprintf(&b, "%s%s: %s\n", strings.ToUpper(f.Name[:1]), f.Name[1:], f.Value)
	}
	fmt.Fprintf(&b, "Rule: %s\nReason: %s\n", termtext.Escape(r.Rule), termtext.Escape(r.Reason))
	if r.Justification != "" {
		fmt.Fprintf(&b, "The policy says: %s\n", termtext.Escape(r.Justification))
	}
	fmt.Fprintf(&b, "Approval request: %s (expires %s)\nRequest id: %s\n\n", r.ID, r.Expires.UTC().Format(time.RFC3339), id)
	b.WriteString("Tick \"approve\" to let it run once, exactly as shown, in the sandbox; decline to refuse it. " +
		"Leave the request id as it is: an answer counts only for this request.")
	return b.String()
}

// elicitSchema is the form: the request id (prefilled), whether to
// approve (false unless the person says so), and an optional reason.
func elicitSchema(id string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			ElicitID: {Type: "string", Title: "Request id", Default: jsonString(id),
				Description: "the id of this request, as shown in the message: leave it as it is"},
			ElicitApprove: {Type: "boolean", Title: "Approve: run this command once", Default: []byte("false")},
			ElicitReason:  {Type: "string", Title: "Reason (optional)", MaxLength: ptr(maxReason)},
		},
		Required: []string{ElicitID, ElicitApprove},
	}
}

func jsonString(s string) []byte { return []byte(`"` + s + `"`) } // s is hex and a prefix: nothing to escape
