package enforcer

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// egressBase is the context of a run's egress events: the run, tool and
// task, without the command.
func egressBase(base audit.Context) audit.Context {
	base.Command, base.Path, base.Args, base.Env = "", "", nil, nil
	return base
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

// ErrAudit is matched (errors.Is) by Run's error when a record of the run
// could not be written to the audit log (Result.AuditError).
var ErrAudit = errors.New("a record of the run could not be written to the audit log")

// errNotRecorded is what the proxy tells a client whose connection it
// refused because its decision could not be recorded: the log's path and
// error stay out of the sandbox (the run's AuditError has them).
var errNotRecorded = errors.New("the audit log could not record it")

// records writes one run's records and keeps the first one the audit log
// refused: a record that cannot be written is never silent
// (docs/audit.md, "Durability and failures").
type records struct {
	e       *Enforcer
	decided func() error // waits for the decision's record
	mu      sync.Mutex
	failed  error
}

// newRecords starts writing the run's decision, durably; decided waits
// for it. Its write and fsync overlap the building of the sandbox, and
// every later step waits for them before it records anything or releases
// the command.
func (e *Enforcer) newRecords(decision audit.Event) *records {
	r := &records{e: e}
	done := make(chan error, 1)
	go func() { done <- r.record(decision) }()
	r.decided = sync.OnceValue(func() error { return <-done })
	return r
}

// record appends ev durably (Enforcer.record).
func (r *records) record(ev audit.Event) error { return r.note(ev, r.e.record(ev)) }

// recordLazy appends ev, synced by the next record (Enforcer.recordLazy).
func (r *records) recordLazy(ev audit.Event) error { return r.note(ev, r.e.recordLazy(ev)) }

// note keeps err, the failure to write ev, when it is the run's first.
func (r *records) note(ev audit.Event, err error) error {
	if err == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = audit.NotWritten(ev, err)
	}
	return err
}

// setupFailed records, after the decision, that airlock could not run the
// command.
func (r *records) setupFailed(res Result, base audit.Context, err error) (Result, error) {
	if derr := r.decided(); derr != nil && derr != err {
		err = errors.Join(err, derr)
	}
	res.ExitCode = ExitSetup
	res.Error = err.Error()
	ev := base
	ev.Event = audit.EventStartupRefused
	_ = r.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionDeny,
		Reason: "airlock could not run the command: " + err.Error(), Context: ev})
	res, _ = r.finish(res)
	return res, err
}

// finish sets the result of a run whose records were not all written:
// AuditError, and ExitAudit when the command ran (the status it would
// have had kept in CommandExitCode). The error wraps ErrAudit.
func (r *records) finish(res Result) (Result, error) {
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	if failed == nil {
		return res, nil
	}
	res.AuditError = failed.Error()
	if res.ExitCode != ExitSetup && res.ExitCode != ExitGate {
		code := res.ExitCode
		res.CommandExitCode, res.ExitCode = &code, ExitAudit
	}
	return res, fmt.Errorf("enforcer: %w: %w", ErrAudit, failed)
}

// outcome writes the resource outcome and the teardown.
func (r *records) outcome(base audit.Context, res Result) {
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
	// Synced by the teardown record that follows at once.
	_ = r.recordLazy(ev)
	down := base
	down.Event = audit.EventSandboxTornDown
	_ = r.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo,
		Reason: "every process of the sandbox ended; its cgroup, mounts and namespaces are gone", Context: down})
}
