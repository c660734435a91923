package audit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The abandoned-run sweep (docs/audit.md, "Abandoned runs"): the first
// append of every Log looks at the log's runs directory (claim.go). A
// claim whose lock it can take belongs to a run whose airlock died before
// it ended the run, and it writes a run_abandoned record for that run,
// in the same write; the claim is removed once that is written.

// EventRunAbandoned is the lifecycle event of a run whose airlock process
// died before the run ended (its outcome may never have been recorded).
const EventRunAbandoned = "run_abandoned"

const (
	maxSweep        = 256 // claims looked at per sweep, so a flood of files cannot stall a writer
	reasonAbandoned = "the airlock process running this run stopped before it ended the run (it was killed, " +
		"or the host went down): the run's last records may be missing, and what its command did after them is not recorded"
)

// sweepRuns adds to b, on this Log's first append, a run_abandoned
// record for each run whose claim is no longer held, and returns those
// claims, locked, for releaseSwept.
func (l *Log) sweepRuns(b *batch) []*os.File {
	if l.swept {
		return nil
	}
	dir := l.path + RunsSuffix
	d, err := os.OpenFile(dir, os.O_RDONLY|noFollow, 0) // never through a link
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(maxSweep)
	d.Close()
	var held []*os.File
	for _, name := range names {
		id, ok := strings.CutSuffix(name, claimSuffix)
		if !ok || !validRunID(id) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|noFollow, 0)
		if err != nil {
			continue
		}
		if tryLock(f) != nil {
			f.Close() // its run is live
			continue
		}
		var buf [64]byte
		n, _ := f.ReadAt(buf[:], 0)
		pidText, since, _ := strings.Cut(strings.TrimSpace(string(buf[:n])), " ")
		pid, _ := strconv.Atoi(pidText)
		ev := Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: reasonAbandoned,
			Context: Context{RunID: id, Event: EventRunAbandoned, PID: max(pid, 0)}}
		if _, err := time.Parse(time.RFC3339Nano, since); err == nil {
			ev.Context.Details = map[string]string{"claimedAt": since}
		}
		b.add(ev)
		held = append(held, f)
	}
	return held
}

// releaseSwept removes the claims that sweepRuns returned, when their
// records were written (the sweep is then done), and releases them.
func (l *Log) releaseSwept(held []*os.File, written bool) {
	l.swept = l.swept || written
	for _, f := range held {
		if written {
			os.Remove(f.Name())
		}
		f.Close()
	}
}
