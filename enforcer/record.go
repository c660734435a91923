package enforcer

import (
	"fmt"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// recordEgress writes one proxy event to the audit stream. It is called
// synchronously by the proxy before it dials, so the decision is durable
// before the connection it allows.
func (e *Enforcer) recordEgress(base audit.Context, ev proxy.Event) {
	ctx := base
	ctx.Command, ctx.Path, ctx.Args = "", "", nil
	ctx.Host = ev.Requested
	ctx.Port = ev.Target.Port
	ctx.Protocol = string(ev.Protocol)
	for _, a := range ev.Resolved {
		ctx.Addresses = append(ctx.Addresses, a.String())
	}
	if ev.Stage == proxy.StageDecided {
		_ = e.record(audit.FromDecision(ev.Decision, ctx))
		return
	}
	if ev.Dialled.IsValid() {
		ctx.Addresses = []string{ev.Dialled.String()}
	}
	reason := fmt.Sprintf("connection to %s closed after %s: %d bytes sent, %d received",
		ev.Target, ev.Duration.Round(time.Millisecond), ev.BytesUp, ev.BytesDown)
	if ev.Err != nil {
		reason = fmt.Sprintf("allowed by the egress gate; the connection to %s then failed: %v", ev.Target, ev.Err)
	}
	ctx.Gate, ctx.Rule = decision.GateEgress, ev.Decision.Rule
	_ = e.record(audit.Event{Kind: audit.KindEgress, Decision: audit.DecisionInfo, Reason: reason, Context: ctx})
}

// withOutcome copies the sandbox's result into res and sets the exit
// status PRODUCT.md gives.
func withOutcome(res Result, out sandbox.Result) Result {
	res.Signal = out.Signal
	res.WallMs = out.Wall.Milliseconds()
	res.CPUMs = out.CPU.Milliseconds()
	res.PeakMemoryBytes = out.PeakMemoryBytes
	res.Receipt = map[string]string{}
	for k, v := range out.Receipt {
		res.Receipt[k] = v
	}
	switch {
	case out.Signal > 0:
		res.ExitCode = 128 + out.Signal
	default:
		res.ExitCode = out.ExitCode
	}
	if out.KilledBy != "" {
		k := out.KilledBy
		res.KilledBy = &k
		res.ExitCode = 137
		res.KillReason = "killed by the " + k + " cap"
	}
	return res
}

// recordOutcome writes the resource outcome and the teardown.
func (e *Enforcer) recordOutcome(base audit.Context, res Result) {
	ctx := base
	ctx.ExitCode = &res.ExitCode
	ctx.Signal = res.Signal
	ctx.WallMs, ctx.CPUMs, ctx.PeakMemoryBytes = res.WallMs, res.CPUMs, res.PeakMemoryBytes
	ev := audit.Event{Kind: audit.KindResource, Decision: audit.DecisionInfo, Context: ctx,
		Reason: fmt.Sprintf("run finished within its caps: exit status %d", res.ExitCode)}
	if res.KilledBy != nil {
		ctx.KilledBy = *res.KilledBy
		ev = audit.Event{Kind: audit.KindResource, Decision: audit.DecisionKill, Context: ctx, Reason: res.KillReason}
	}
	_ = e.record(ev)
	down := base
	down.Event = audit.EventSandboxTornDown
	_ = e.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo,
		Reason: "sandbox torn down: every process ended, cgroup and mounts removed", Context: down})
}
