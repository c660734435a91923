package enforcer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// askReq is the command testPolicy escalates.
func askReq(out *bytes.Buffer) enforcer.Request {
	return enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "echo", "ask", "ran"}, Stdout: out}
}

const whyAsk = `"/.airlock/self" matched escalate rule "ask-first" of tool "agent_code": needs human approval`

// eventNames lists "kind:decision:event" of a run's records.
func (f *fixture) eventNames(runID string) []string {
	var out []string
	for _, ev := range f.events(runID) {
		out = append(out, string(ev.Kind)+":"+ev.Decision+":"+ev.Context.Event)
	}
	return out
}

// TestDeniedRefusalForAnAgent: a denial exits 77, is not retryable, and
// shows the signatures the tool does allow.
func TestDeniedRefusalForAnAgent(t *testing.T) {
	f := newFixture(t, nil)
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "run_tests", Command: "pytest", Args: []string{"--pdb"}})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res)
	r := res.Refusal
	if res.ExitCode != enforcer.ExitDenied || r == nil || r.Retryable || r.Decision != "deny" || r.Reason != res.Reason || r.Approval != nil {
		t.Fatalf("result %+v refusal %+v", res, r)
	}
	if len(r.AllowedSignatures) != 2 || !slices.Equal(r.AllowedSignatures[1].Args, []string{"-v", "-x"}) {
		t.Errorf("allowed signatures %+v", r.AllowedSignatures)
	}
}

// TestRuleRefusalNamesNoWayRound: a deny rule refuses a file however the
// argument spells it from the step's working directory, the record keeps
// that directory, and the refusal lists no allow rule to try instead.
func TestRuleRefusalNamesNoWayRound(t *testing.T) {
	f := newFixtureWith(t, `{"toolScopes": {"read_file": {
		"allow": [{"name": "cat", "command": "cat", "allowExtraArgs": true}],
		"deny": [{"name": "no-env", "command": "cat", "argPatterns": [["/workspace/.env"]], "allowExtraArgs": true}]}}}`, false, nil)
	for _, req := range []enforcer.Request{
		{Tool: "read_file", Command: "cat", Args: []string{"./.env"}},
		{Tool: "read_file", Command: "cat", Args: []string{"sub/../.env"}},
		{Tool: "read_file", Command: "cat", Args: []string{"../.env"}, Cwd: "sub"},
		{Tool: "read_file", Command: "cat", Args: []string{".env"}, Cwd: "/workspace"},
	} {
		res, err := f.enf.Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		r := res.Refusal
		if res.ExitCode != enforcer.ExitDenied || r == nil || r.Rule != "no-env" || r.AllowedSignatures != nil {
			t.Errorf("cat %q in %q: exit %d refusal %+v", req.Args, req.Cwd, res.ExitCode, r)
		}
		want := map[string]string{"sub": "/workspace/sub"}[req.Cwd]
		if evs := f.events(res.RunID); len(evs) != 1 || evs[0].Context.Details["cwd"] != want {
			t.Errorf("cat %q in %q: records %+v, want one with details.cwd %q", req.Args, req.Cwd, evs, want)
		}
	}
}

// TestEscalationWithoutApprovalPath: with no store and no approver, an
// escalation exits 75 and says that nothing can approve it.
func TestEscalationWithoutApprovalPath(t *testing.T) {
	f := newFixture(t, nil)
	var out bytes.Buffer
	res, err := f.enf.Run(context.Background(), askReq(&out))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Refusal
	if res.ExitCode != enforcer.ExitEscalated || r == nil || r.Retryable || r.Approval == nil || r.Approval.ID != "" ||
		!strings.Contains(r.Approval.How, "no approval path") || r.Justification != "this one needs a person" || out.Len() != 0 ||
		r.AllowedSignatures != nil {
		t.Fatalf("result %+v refusal %+v approval %+v", res, r, r.Approval)
	}
}

// TestApprovalRequestLivesThePolicysTTL: an approval request expires
// after the policy's approvals.ttlSeconds, else approval.DefaultTTL.
func TestApprovalRequestLivesThePolicysTTL(t *testing.T) {
	for _, c := range []struct {
		src  string
		want time.Duration
	}{
		{testPolicy, approval.DefaultTTL},
		{strings.Replace(testPolicy, "{", `{"approvals": {"ttlSeconds": 60},`, 1), time.Minute},
	} {
		store := newMemStore()
		f := newFixtureWith(t, c.src, false, nil, func(o *enforcer.Options) { o.Approvals = store })
		if _, err := f.enf.Run(context.Background(), askReq(&bytes.Buffer{})); err != nil {
			t.Fatal(err)
		}
		if r := store.only(); r.Expires.Sub(r.Created) != c.want {
			t.Errorf("request lives %v, want %v", r.Expires.Sub(r.Created), c.want)
		}
	}
}

// TestEscalationRequestsAndRedeems walks the operator's path: an
// escalation makes a request bound to the tool, the exact argv and the
// policy (exit 75, its id in the refusal); once approved, the same
// command runs exactly once with it; a replay, a forged id, an altered
// command and a denied request are each refused with their reason.
func TestEscalationRequestsAndRedeems(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, nil, func(o *enforcer.Options) { o.Approvals = store })
	ctx := context.Background()
	var out bytes.Buffer
	res, err := f.enf.Run(ctx, askReq(&out))
	if err != nil {
		t.Fatal(err)
	}
	req := store.only()
	want := approval.Request{ID: req.ID, Session: enforcer.RunScope, Tool: "agent_code", Argv: []string{sandbox.SelfPath, "payload", "echo", "ask", "ran"},
		PolicyDigest: f.pol.Digest, Rule: "ask-first", Reason: whyAsk, Justification: "this one needs a person", Created: req.Created, Expires: req.Expires}
	if !slices.Equal(req.Argv, want.Argv) || req.Session != want.Session || req.Tool != want.Tool || req.PolicyDigest != want.PolicyDigest ||
		req.Rule != want.Rule || req.Reason != want.Reason || req.Justification != want.Justification {
		t.Fatalf("request %+v\nwant    %+v", req, want)
	}
	checkResult(t, res)
	r := res.Refusal
	if res.ExitCode != enforcer.ExitEscalated || r == nil || !r.Retryable || r.Approval == nil || r.Approval.ID != req.ID ||
		!strings.Contains(r.Approval.How, "airlock approve "+req.ID) || out.Len() != 0 {
		t.Fatalf("result %+v refusal %+v", res, r)
	}
	if got := f.eventNames(res.RunID); !slices.Equal(got, []string{"command:escalate:", "command:escalate:" + enforcer.EventApprovalRequested}) {
		t.Errorf("events %q", got)
	}

	// Not answered yet: refused, pending.
	run := func(id string, rq enforcer.Request) enforcer.Result {
		t.Helper()
		rq.Approval = id
		res, err := f.enf.Run(ctx, rq)
		if err != nil && !errors.Is(err, sandbox.ErrUnsupported) {
			t.Fatal(err)
		}
		return res
	}
	if res := run(req.ID, askReq(&out)); res.ExitCode != enforcer.ExitEscalated || !strings.Contains(res.Refusal.Reason, "has not been answered") {
		t.Fatalf("pending: %+v %+v", res, res.Refusal)
	}
	if err := store.Answer(req.ID, approval.Answer{Allow: true, By: "operator uid 0 via airlock approve", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Forged and altered: refused without consuming the approval.
	if res := run("apr-deadbeefdeadbeefdeadbeefdeadbeef", askReq(&out)); res.ExitCode != enforcer.ExitEscalated ||
		!strings.Contains(res.Refusal.Reason, "no such request was minted") {
		t.Fatalf("forged: %+v %+v", res, res.Refusal)
	}
	altered := askReq(&out)
	altered.Args = append(altered.Args, "--and-more")
	if res := run(req.ID, altered); res.ExitCode != enforcer.ExitEscalated || !strings.Contains(res.Refusal.Reason, "was given for another command") {
		t.Fatalf("altered: %+v %+v", res, res.Refusal)
	}
	if os.Geteuid() != 0 {
		return // the approved run needs a sandbox
	}
	ok := run(req.ID, askReq(&out))
	if ok.ExitCode != 0 || ok.Refusal != nil || ok.Approval == nil || ok.Approval.ID != req.ID || ok.Approval.By != "operator uid 0 via airlock approve" ||
		strings.TrimSpace(out.String()) != "ask ran" {
		t.Fatalf("approved: %+v %+v output %q", ok, ok.Refusal, out.String())
	}
	checkResult(t, ok)
	if got := f.eventNames(ok.RunID); !slices.Equal(got[:2], []string{"command:escalate:", "command:allow:" + enforcer.EventApprovalRedeemed}) {
		t.Errorf("approved run's events %q", got)
	}
	out.Reset()
	if res := run(req.ID, askReq(&out)); res.ExitCode != enforcer.ExitEscalated || !strings.Contains(res.Refusal.Reason, "already used") || out.Len() != 0 {
		t.Fatalf("replay: %+v %+v", res, res.Refusal)
	}
	// A denied request: exit 77, not retryable.
	den, _ := f.enf.Run(ctx, askReq(&out))
	id := den.Refusal.Approval.ID
	if err := store.Answer(id, approval.Answer{Allow: false, By: "operator", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if res := run(id, askReq(&out)); res.ExitCode != enforcer.ExitDenied || res.Refusal.Retryable || !strings.Contains(res.Refusal.Reason, "was denied") {
		t.Fatalf("denied: %+v %+v", res, res.Refusal)
	}
	f.verify(t)
}

// TestApproverCallback: the library callback answers an escalation; an
// allow runs the command once and is audited with who answered; a deny
// exits 77; an error is no answer (75).
func TestApproverCallback(t *testing.T) {
	testutil.RequireRoot(t)
	store := newMemStore()
	ap := &fakeApprover{allow: true}
	f := newFixture(t, nil, func(o *enforcer.Options) { o.Approvals, o.Approver = store, ap })
	ctx := context.Background()
	var out bytes.Buffer
	res, err := f.enf.Run(ctx, askReq(&out))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Approval == nil || res.Approval.By != "test approver" || strings.TrimSpace(out.String()) != "ask ran" || len(ap.seen) != 1 {
		t.Fatalf("approved: %+v output %q seen %d", res, out.String(), len(ap.seen))
	}
	want := []string{"command:escalate:", "command:escalate:" + enforcer.EventApprovalRequested, "command:allow:" + enforcer.EventApprovalAnswered}
	if got := f.eventNames(res.RunID); !slices.Equal(got[:3], want) {
		t.Errorf("events %q, want %q first", got, want)
	}
	var answered audit.Event
	for _, ev := range f.events(res.RunID) {
		if ev.Context.Event == enforcer.EventApprovalAnswered {
			answered = ev
		}
	}
	if answered.Context.Details["answeredBy"] != "test approver" || answered.Context.Details["approval"] != ap.seen[0].ID {
		t.Errorf("answer record %+v", answered.Context)
	}
	// The callback's approval was consumed: it cannot be redeemed again.
	rq := askReq(&out)
	rq.Approval = ap.seen[0].ID
	if res, _ := f.enf.Run(ctx, rq); res.ExitCode != enforcer.ExitEscalated || !strings.Contains(res.Refusal.Reason, "already used") {
		t.Fatalf("replay of a callback's approval: %+v %+v", res, res.Refusal)
	}
	ap.allow = false
	if res, _ := f.enf.Run(ctx, askReq(&out)); res.ExitCode != enforcer.ExitDenied || res.Refusal.Retryable {
		t.Fatalf("denied by the callback: %+v %+v", res, res.Refusal)
	}
	ap.err = errors.New("nobody is at the desk")
	if res, _ := f.enf.Run(ctx, askReq(&out)); res.ExitCode != enforcer.ExitEscalated || !strings.Contains(res.Refusal.Reason, "nobody is at the desk") ||
		res.Refusal.Approval == nil || res.Refusal.Approval.ID == "" {
		t.Fatalf("approver error: %+v %+v", res, res.Refusal)
	}
	f.verify(t)
}
