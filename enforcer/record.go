package enforcer

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// egressRecorder records the proxy's events under base (its run, tool
// and task, without the command), each durable before the connection it
// allows (a failed write refuses it, and fails the command); a
// connection's end is written lazily, since nothing waits on it.
func (sc *scribe) egressRecorder(base audit.Context) EgressRecorder {
	base.Command, base.Path, base.Args, base.Env = "", "", nil, nil
	return EgressRecorder{
		Context: func() audit.Context { return base },
		Record: func(ev audit.Event, lazy bool) error {
			if lazy {
				return sc.recordLazy(ev)
			}
			return sc.record(ev)
		},
	}
}

// withOutcome copies the sandbox's result into res and sets the exit
// status docs/cli.md gives.
func withOutcome(res Result, out sandbox.Result, caps policy.EffectiveCaps) Result {
	if out.Path != "" { // the file the init ran: a workspace program's, resolved inside
		res.Path = out.Path
	}
	res.Signal = out.Signal
	res.WallMs = out.Wall.Milliseconds()
	res.CPUMs = out.CPU.Milliseconds()
	res.PeakMemoryBytes = out.PeakMemoryBytes
	res.FindingsSkipped = append(res.FindingsSkipped, out.FindingsSkipped...)
	maps.Copy(res.Receipt, out.Receipt)
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
		return fmt.Sprintf("killed by the disk cap: a file (or, on macOS, the sandbox's copies together) passed diskWriteMb %d; every process was killed", c.DiskWriteMB)
	case "output":
		return fmt.Sprintf("killed by the output cap: stdout and stderr passed outputMb %d together, and the output was cut there; every process was killed", c.OutputMB)
	}
	return "killed by the " + killedBy + " cap; every process was killed"
}

// ErrAudit is matched (errors.Is) by Run's error when a record of the run
// could not be written to the audit log (Result.AuditError).
var ErrAudit = errors.New("a record of the run could not be written to the audit log")

// errNotRecorded is what the proxy tells a client whose connection it
// refused because its decision could not be recorded: the log's path and
// error stay out of the sandbox (the command's AuditError has them).
var errNotRecorded = errors.New("the audit log could not record it")

// recordOutcome writes the command's resource outcome, lazily: a run's
// is synced by its teardown record, which follows at once; a step's by
// the next step's decision, or the session's teardown.
func (a *attempt) recordOutcome() {
	res := a.res // its copy of ExitCode is the record's
	ctx := a.base
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
	_ = a.sc.recordLazy(ev)
}

// recordTeardown writes the sandbox_torn_down record, synced.
func (e *Enforcer) recordTeardown(sc *scribe, base audit.Context, reason string) {
	down := base
	down.Event = audit.EventSandboxTornDown
	_ = sc.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: reason, Context: down})
}

// signingReady waits for the check of the log's signing key, if it has
// one (audit.PrepareSigner): a key that will not sign the run's
// checkpoint fails it before anything runs, not at its end.
func (e *Enforcer) signingReady() error {
	if s := e.log.Signer(); s != nil {
		if err := s.Check(); err != nil {
			return fmt.Errorf("enforcer: %w", err)
		}
	}
	return nil
}
