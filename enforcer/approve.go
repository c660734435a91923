package enforcer

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
)

// ApprovalStore keeps approval requests between the command that was
// escalated and the one that redeems its approval (*approval.Store).
type ApprovalStore interface {
	// Create mints the request's ID, Created and Expires and keeps it,
	// pending, for ttl.
	Create(r approval.Request, ttl time.Duration) (approval.Request, error)
	// Answer records an answer to a pending request.
	Answer(id string, a approval.Answer) error
	// Redeem consumes an approved request bound to exactly what want
	// asks for (approval.Request.Match), once, before it expires.
	Redeem(id string, want approval.Request) (approval.Request, approval.Answer, error)
}

// RunScope is the Session of an approval request made by Run: a run's
// approval is bound to all the request shows but the run's id, and
// redeemed by a later run (`airlock run --approval ID`), which has its
// own run id. No session may have this id.
const RunScope = "run"

// Lifecycle names of the approval records in the audit stream
// (Context.Event of command events).
const (
	EventApprovalRequested = "approval_requested" // an escalation made a request (decision escalate)
	EventApprovalAnswered  = "approval_answered"  // an Approver answered it (decision allow or deny)
	EventApprovalRedeemed  = "approval_redeemed"  // an approval let the command run once (decision allow)
	EventApprovalRefused   = "approval_refused"   // no approval let it run (decision deny)
)

// admit runs the refusal and approval path of a command the gate did
// not allow, once its decision is durable: a denial never runs; an
// escalation runs once, when an approval is redeemed or the Approver
// allows it. Every request and answer is recorded. It reports whether
// the command may run now; when it may not, the result holds the
// refusal and its status.
func (a *attempt) admit(ctx context.Context) (bool, error) {
	if err := a.decided(); err != nil {
		return false, err
	}
	e, d, av := a.e, a.d, argv(a.st.Command, a.st.Args)
	ref := &Refusal{Gate: d.Gate, Decision: d.Verdict.String(), Reason: d.Why(), Rule: d.Rule, Justification: d.Justification}
	if d.Rule == "" {
		// Refused by default: what the tool allows is what to ask for
		// instead. A deny or escalate rule refused this request on
		// purpose, and the allow rules it overrides are no way round it.
		ref.AllowedSignatures = e.cmd.Signatures(a.st.Tool, a.st.Command)
	}
	if d.Verdict != decision.Escalate {
		ref.Decision = decision.Deny.String()
		return a.refuse(ref, ExitDenied, nil)
	}
	ref.Retryable = true
	want := a.bound
	want.Session, want.Tool, want.Argv, want.PolicyDigest = cmp.Or(a.res.Session, RunScope), a.st.Tool, av, e.pol.Digest
	want.Rule, want.Reason, want.Justification = d.Rule, d.Why(), d.Justification
	if a.st.Approval != "" {
		return a.redeem(want, ref)
	}
	store, approver := e.opts.Approvals, e.opts.Approver
	if store == nil && approver == nil {
		ref.Approval = &ApprovalHint{How: "this airlock has no approval path (no approval store and no approver): " +
			"the command cannot run until the policy allows it"}
		ref.Retryable = false
		return a.refuse(ref, ExitEscalated, nil)
	}
	r, err := e.request(store, want)
	if err != nil {
		return false, err
	}
	ev := approvalEvent(a.base, EventApprovalRequested, audit.DecisionEscalate, r.ID,
		fmt.Sprintf("approval request %s: tool %q asks to run %s (rule %q); it waits for an answer until %s",
			r.ID, a.st.Tool, quoteArgv(av), d.Rule, r.Expires.UTC().Format(time.RFC3339)))
	// What else it is bound to (the path and environment are the context's).
	ev.Context.Details["programDigest"], ev.Context.Details["cwd"], ev.Context.Details["stdin"] = r.ProgramDigest, r.Cwd, r.Stdin
	if err := a.sc.record(ev); err != nil {
		return false, err
	}
	hint := &ApprovalHint{ID: r.ID, Expires: &r.Expires, How: approveHow(r.ID)}
	if store == nil {
		hint = &ApprovalHint{ID: r.ID, Expires: &r.Expires, How: "the approver is asked each time the command is escalated"}
	}
	if approver == nil {
		ref.Approval = hint
		return a.refuse(ref, ExitEscalated, nil)
	}
	actx, cancel := context.WithDeadline(ctx, r.Expires)
	defer cancel()
	ans, err := approver.Approve(actx, r)
	if err != nil {
		ref.Reason = fmt.Sprintf("%s; the approver gave no answer to request %s: %v", d.Why(), r.ID, err)
		ref.Approval = hint
		return a.refuse(ref, ExitEscalated, a.sc.record(approvalEvent(a.base, EventApprovalRefused, audit.DecisionDeny, r.ID,
			fmt.Sprintf("approval request %s got no answer from the approver: %v", r.ID, err))))
	}
	if ans.At.IsZero() {
		ans.At = time.Now()
	}
	if ans.By == "" {
		ans.By = "library callback"
	}
	return a.answered(store, r, ans, want, ref)
}

// refuse ends an admission with ref and its status, unless err, the
// failure to record it.
func (a *attempt) refuse(ref *Refusal, code int, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	a.res.Refusal, a.res.ExitCode = ref, code
	return false, nil
}

// request makes the approval request for want: kept in the store, or,
// with an Approver alone, minted here and kept nowhere.
func (e *Enforcer) request(store ApprovalStore, want approval.Request) (approval.Request, error) {
	ttl := e.pol.ApprovalConfig().TTL // approvals.ttlSeconds, else approval.DefaultTTL
	if ttl <= 0 {
		ttl = approval.DefaultTTL
	}
	if store != nil {
		r, err := store.Create(want, ttl)
		if err != nil {
			return r, fmt.Errorf("enforcer: approval request: %w", err)
		}
		return r, nil
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	r := want
	r.ID, r.Created = "apr-"+hex.EncodeToString(b[:]), time.Now().UTC()
	r.Expires = r.Created.Add(ttl)
	return r, nil
}

// answered records an Approver's answer and, for an approval, consumes
// it in the store (so that it cannot be redeemed a second time).
func (a *attempt) answered(store ApprovalStore, r approval.Request, ans approval.Answer, want approval.Request, ref *Refusal) (bool, error) {
	verdict, word := audit.DecisionDeny, "denied"
	if ans.Allow {
		verdict, word = audit.DecisionAllow, "approved"
	}
	ev := approvalEvent(a.base, EventApprovalAnswered, verdict, r.ID,
		fmt.Sprintf("approval request %s was %s by %s%s", r.ID, word, ans.By, saying(ans.Reason)))
	ev.Context.Details["answeredBy"] = ans.By
	if err := a.sc.record(ev); err != nil {
		return false, err
	}
	if store != nil {
		err := store.Answer(r.ID, ans)
		if err == nil && ans.Allow {
			_, _, err = store.Redeem(r.ID, want)
		}
		if err != nil {
			ref.Reason = fmt.Sprintf("%s; the answer to approval request %s could not be kept: %v", want.Reason, r.ID, err)
			return a.refuse(ref, ExitEscalated, a.sc.record(approvalEvent(a.base, EventApprovalRefused, audit.DecisionDeny, r.ID, ref.Reason)))
		}
	}
	if !ans.Allow {
		ref.Decision, ref.Retryable = decision.Deny.String(), false
		ref.Reason = fmt.Sprintf("%s; approval request %s was denied by %s%s", want.Reason, r.ID, ans.By, saying(ans.Reason))
		return a.refuse(ref, ExitDenied, nil)
	}
	a.res.Approval = &ApprovalUse{ID: r.ID, By: ans.By, Reason: ans.Reason}
	return true, nil
}

// redeem lets an escalated command run on the approval it names, once.
func (a *attempt) redeem(want approval.Request, ref *Refusal) (bool, error) {
	id := a.st.Approval
	store := a.e.opts.Approvals
	var (
		ans approval.Answer
		err = errors.New("this airlock has no approval store to check it against")
	)
	if store != nil {
		_, ans, err = store.Redeem(id, want)
	}
	if err != nil {
		code := ExitEscalated
		if errors.Is(err, approval.ErrDenied) {
			code, ref.Decision, ref.Retryable = ExitDenied, decision.Deny.String(), false
		}
		ref.Reason = fmt.Sprintf("%s; approval %s was refused: %v", want.Reason, shownID(id), err)
		ref.Approval = &ApprovalHint{How: "ask again without --approval to make a new request; " +
			"an approval answers one request, once, for exactly what it showed: the command, its program, environment, " +
			"working directory and stdin, the tool, task, workspace, image, session and policy"}
		if store == nil {
			ref.Approval.How = "this airlock has no approval store: the command cannot be approved here"
			ref.Retryable = false
		}
		return a.refuse(ref, code, a.sc.record(approvalEvent(a.base, EventApprovalRefused, audit.DecisionDeny, clipID(id),
			fmt.Sprintf("approval %s was refused for %s: %v", shownID(id), quoteArgv(want.Argv), err))))
	}
	ev := approvalEvent(a.base, EventApprovalRedeemed, audit.DecisionAllow, id,
		fmt.Sprintf("approval %s, given by %s%s, lets %s run once", id, ans.By, saying(ans.Reason), quoteArgv(want.Argv)))
	ev.Context.Details["answeredBy"] = ans.By
	if err := a.sc.record(ev); err != nil {
		return false, err
	}
	a.res.Approval = &ApprovalUse{ID: id, By: ans.By, Reason: ans.Reason}
	return true, nil
}

// approvalEvent is the audit record of one step of an approval.
func approvalEvent(base audit.Context, event, verdict, id, reason string) audit.Event {
	ctx := base
	ctx.Event, ctx.Gate = event, decision.GateCommand
	ctx.Details = map[string]string{"approval": id}
	maps.Copy(ctx.Details, base.Details)
	return audit.Event{Kind: audit.KindCommand, Decision: verdict, Reason: reason, Context: ctx}
}

// approveHow is the sentence that tells how request id is approved.
func approveHow(id string) string {
	return "an operator approves it outside the sandbox with `airlock approve " + id +
		"`; then the same command, asked again with --approval " + id + ", runs once"
}

func saying(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + fmt.Sprintf("%q", reason)
}

// quoteArgv shows an argv in a reason, each word quoted, at most 512
// bytes of it.
func quoteArgv(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q", w)
		if b.Len() > 512 {
			return b.String()[:512] + "..."
		}
	}
	return b.String()
}

// shownID quotes an approval id the caller gave, which may be anything,
// for a reason.
func shownID(id string) string { return fmt.Sprintf("%q", clipID(id)) }

// clipID keeps at most 48 bytes of an approval id the caller gave.
func clipID(id string) string {
	if len(id) > 48 {
		return id[:48] + "..."
	}
	return id
}
