package proxy

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
)

// AuditEvent converts ev into an audit stream event over base (which
// carries the run id, the tool and the like). At StageDecided it is the
// decision itself (kind egress, the verdict, the gate's reason, the
// resolved addresses); at StageClosed an info record of how the allowed
// connection ended (the dialled address, bytes and duration, or the
// failure; when it could not reach its destination, Event.Failed,
// Context.Event EventEgressFailed and the failure in details "error"); at StageRejected a denial with the proxy's reason, the raw
// bytes the client sent in the details ("requested") and, when a flood
// was coalesced, their number ("count"). At StageRefused it is a denial
// of a tunnel the gate allowed, for what it carried; at StageBudget a
// denial naming the budget and the cap reached (Context.Event
// EventBudgetReached). Requests the proxy read carry their method, path,
// entry and credential (its name, never its value) in the details.
// Strings the client chose are passed as the raw bytes it sent: the
// audit stream encodes them.
func AuditEvent(ev Event, base audit.Context) audit.Event {
	ctx := base
	ctx.Task = ev.Task
	ctx.Host, ctx.Port = ev.Target.Host(), ev.Target.Port
	if ctx.Host == "" && ev.Stage != StageRejected && ev.Stage != StageBudget {
		// Unparsable: keep what the client asked for.
		ctx.Host = ev.Requested
		if h, _, err := net.SplitHostPort(ev.Requested); err == nil {
			ctx.Host = h
		}
	}
	ctx.Protocol = string(ev.Protocol)
	details := map[string]string{"client": ev.Client, "requested": ev.Requested}
	for k, v := range base.Details {
		details[k] = v
	}
	if ev.Count > 1 {
		details["count"] = strconv.Itoa(ev.Count)
	}
	for k, v := range map[string]string{"method": ev.Method, "path": ev.Path, "entry": ev.Entry, "credential": ev.Credential, "budget": ev.Budget, "identity": ev.Identity} {
		if v != "" {
			details[k] = v
		}
	}
	ctx.Details = details
	if ev.Stage == StageBudget {
		ctx.Event = EventBudgetReached
		details["cap"] = ev.Requested
		delete(details, "requested")
		delete(details, "client")
	}
	if ev.Stage == StageDecided || ev.Stage == StageRejected || ev.Stage == StageRefused || ev.Stage == StageBudget {
		for _, a := range ev.Resolved {
			ctx.Addresses = append(ctx.Addresses, a.String())
		}
		return audit.FromDecision(ev.Decision, ctx)
	}
	if ev.Dialled.IsValid() {
		ctx.Addresses = []string{ev.Dialled.String()}
	}
	if ev.Failed() {
		ctx.Event, details["error"] = audit.EventEgressFailed, ev.Err.Error()
	}
	ctx.Gate, ctx.Rule = decision.GateEgress, ev.Decision.Rule
	return audit.Event{Kind: audit.KindEgress, Decision: audit.DecisionInfo, Reason: closedReason(ev), Context: ctx}
}

// closedReason is the fixed sentence of a StageClosed event.
func closedReason(ev Event) string {
	if ev.Err != nil {
		return fmt.Sprintf("%sthe connection to %s failed: %v", reasonFailedLead, ev.Target, ev.Err)
	}
	return fmt.Sprintf("connection to %s closed after %s: %d bytes sent, %d received",
		ev.Target, ev.Duration.Round(time.Millisecond), ev.BytesUp, ev.BytesDown)
}

// EventBudgetReached is the Context.Event of the record of a budget's
// cap reached (StageBudget), on which the monitor alerts.
const EventBudgetReached = audit.EventEgressBudgetReached

// reasonFailedLead opens the record of an allowed connection that failed.
const reasonFailedLead = "allowed by the egress gate; "
