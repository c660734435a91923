package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A run's claim (docs/audit.md, "Abandoned runs"): while a run is live,
// its airlock process holds an exclusive flock on a file named for the
// run in the directory beside the log (RunsSuffix), as the cgroup sweep
// and the canaries do (limits, runbook). The kernel drops the lock when
// the process dies, however it dies; the next writer's sweep (sweep.go)
// then finds the run abandoned. A claim also keeps the run's records
// that its Log writes, for End's proofs.

// RunsSuffix names the directory of a log's live runs: the log's path
// and this.
const RunsSuffix = ".runs"

// claimSuffix ends a claim's file name, after the run's id.
const claimSuffix = ".lock"

// RunClaim is a live run's claim on its log: while it is held, the run is
// not abandoned. It also keeps the records the Log writes for the run,
// for End's proofs.
type RunClaim struct {
	l      *Log
	id     string
	f      *os.File
	path   string
	first  []Event // the first MaxProvenRecords/2 records
	last   []Event // then a ring of the last MaxProvenRecords/2
	n      int
	closed bool
}

// validRunID reports whether id can name a claim file.
func validRunID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// BeginRun claims the run id on the log, until End. An id that cannot
// name a file (letters, digits, '-', '_', '.') is refused.
func (l *Log) BeginRun(id string) (*RunClaim, error) {
	if !validRunID(id) {
		return nil, fmt.Errorf("audit: run id %s: want letters, digits, '-', '_' or '.'", shown(id))
	}
	dir := l.path + RunsSuffix
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("audit: runs: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		// A link would have the claims (and the sweep's removals) land
		// wherever it points.
		return nil, fmt.Errorf("audit: runs: %s is not a directory", dir)
	}
	f, path, err := claimFile(dir, id)
	if err != nil {
		return nil, fmt.Errorf("audit: claim run %s: %w", id, err)
	}
	c := &RunClaim{l: l, id: id, f: f, path: path}
	l.mu.Lock()
	if l.runs == nil {
		l.runs = map[string]*RunClaim{}
	}
	l.runs[id] = c
	l.mu.Unlock()
	return c, nil
}

// claimFile creates dir/id.lock, locked: it is locked under a temporary
// name and then renamed into place, so that a sweeper never sees it
// unlocked.
func claimFile(dir, id string) (*os.File, string, error) {
	tmp := filepath.Join(dir, ".new-"+id)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|noFollow, 0o600)
	if err != nil {
		return nil, "", err
	}
	final := filepath.Join(dir, id+claimSuffix)
	if err = tryLock(f); err == nil {
		fmt.Fprintf(f, "%d %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano))
		if _, lerr := os.Lstat(final); lerr == nil {
			err = errors.New("the run is live in another airlock process")
		} else {
			err = os.Rename(tmp, final)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, "", err
	}
	return f, final, nil
}

// seen keeps ev, a record the Log wrote, when it is the claim's run's.
func (c *RunClaim) seen(ev Event) {
	h := MaxProvenRecords / 2
	switch {
	case len(c.first) < h:
		c.first = append(c.first, ev)
	case len(c.last) < h:
		c.last = append(c.last, ev)
	default:
		c.last[(c.n-h)%h] = ev
	}
	c.n++
}

// records returns the kept records in order and how many were left out.
func (c *RunClaim) records() ([]Event, int) {
	h := MaxProvenRecords / 2
	out := append([]Event(nil), c.first...)
	if c.n <= 2*h {
		return append(out, c.last...), 0
	}
	at := (c.n - h) % h
	out = append(out, c.last[at:]...)
	return append(out, c.last[:at]...), c.n - 2*h
}

// End ends the run: its claim is released (the run is no longer live),
// and, when the Log has a signer, a checkpoint is signed and the run's
// records are proven in it. Call it once the run's last record is
// written. Without a signer it returns nil and no error.
func (c *RunClaim) End() (*RunProof, error) {
	l := c.l
	if err := l.flushCounts(true, c.id); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if c.closed {
		l.mu.Unlock()
		return nil, errors.New("audit: the run was ended already")
	}
	c.closed = true
	delete(l.runs, c.id)
	l.mu.Unlock()
	os.Remove(c.path)
	c.f.Close()
	if l.signer == nil {
		return nil, nil
	}
	cp, err := l.Checkpoint()
	if err != nil {
		return nil, err
	}
	evs, omitted := c.records()
	p := &RunProof{Checkpoint: cp.Note, PublicKey: l.signer.PublicKey(), Records: []RecordProof{}, Omitted: omitted}
	if len(evs) > 0 {
		if p.Records, err = l.Prove(cp, evs); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// keepRuns has each claim keep its run's records among evs, written.
func (l *Log) keepRuns(evs []Event) {
	for _, ev := range evs {
		if c := l.runs[ev.Context.RunID]; c != nil && ev.Context.RunID != "" {
			c.seen(ev)
		}
	}
}
