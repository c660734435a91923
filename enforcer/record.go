package enforcer

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// recordEgress writes one proxy event to the audit stream. It is called
// synchronously by the proxy before it dials, so the decision is durable
// before the connection it allows.
func (e *Enforcer) recordEgress(base audit.Context, ev proxy.Event) {
	ctx := base
	ctx.Command, ctx.Path, ctx.Args = "", "", nil
	ctx.Host, ctx.Port = requestedHost(ev.Requested), ev.Target.Port
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

// requestedHost is the host part of a destination as the client spelled
// it ("[::1]:80" → "::1", "0xA9FEA9FE" → itself), so the audit keeps the
// spelling an attacker used.
func requestedHost(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
}

// withOutcome copies the sandbox's result into res and sets the exit
// status PRODUCT.md gives.
func withOutcome(res Result, out sandbox.Result, caps policy.EffectiveCaps) Result {
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
		res.KillReason = killReason(k, caps)
	}
	return res
}

// killReason says which cap killed a run, at what limit: one fixed
// sentence per cap.
func killReason(killedBy string, c policy.EffectiveCaps) string {
	switch killedBy {
	case "wall":
		return fmt.Sprintf("killed by the wall cap: the run passed wallSeconds %g; every process was killed", c.WallSeconds)
	case "cpu":
		return fmt.Sprintf("killed by the cpu cap: the process tree used more than cpuSeconds %g of CPU; every process was killed", c.CPUSeconds)
	case "memory":
		return fmt.Sprintf("killed by the memory cap: the process tree passed memoryMb %d; every process was killed", c.MemoryMB)
	case "pids":
		return fmt.Sprintf("killed by the pids cap: the process tree reached processCount %d tasks; every process was killed", c.ProcessCount)
	case "disk":
		return fmt.Sprintf("killed by the disk cap: a file passed diskWriteMb %d; every process was killed", c.DiskWriteMB)
	}
	return "killed by the " + killedBy + " cap; every process was killed"
}

// recordOutcome writes the resource outcome and the teardown.
func (e *Enforcer) recordOutcome(base audit.Context, res Result) {
	ctx := base
	ctx.ExitCode = &res.ExitCode
	ctx.Signal = res.Signal
	ctx.WallMs, ctx.CPUMs, ctx.PeakMemoryBytes = res.WallMs, res.CPUMs, res.PeakMemoryBytes
	ev := audit.Event{Kind: audit.KindResource, Decision: audit.DecisionInfo, Context: ctx,
		Reason: fmt.Sprintf("exit status %d after %d ms wall and %d ms CPU, peak memory %d bytes",
			res.ExitCode, res.WallMs, res.CPUMs, res.PeakMemoryBytes)}
	if res.KilledBy != nil {
		ctx.KilledBy = *res.KilledBy
		ev = audit.Event{Kind: audit.KindResource, Decision: audit.DecisionKill, Context: ctx,
			Reason: strings.TrimPrefix(res.KillReason, "killed by the "+*res.KilledBy+" cap: ")}
	}
	_ = e.record(ev)
	down := base
	down.Event = audit.EventSandboxTornDown
	_ = e.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo,
		Reason: "every process of the sandbox ended; its cgroup, mounts and namespaces are gone", Context: down})
}
