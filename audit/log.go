package audit

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"
)

// ErrClosed is returned by Append on a closed Log.
var ErrClosed = errors.New("audit: log is closed")

// chainIDLen is the length of a chain id in hex digits (128 bits).
const chainIDLen = 32

// Fixed reasons of the records the writer adds itself.
const (
	reasonChainStarted = "audit log started: every later line is chained to this one"
	reasonRepaired     = "the previous line was damaged (an airlock process stopped mid-write, or the file " +
		"was edited); it is kept as evidence outside the chain, which continues from the line before it"
)

// Log appends events to an audit file. It is safe for concurrent use, and
// several Logs, in one process or many, may append to the same file: each
// Append locks the file (see the package documentation).
type Log struct {
	mu   sync.Mutex
	f    *os.File
	path string
	now  func() time.Time
	hook Hook
	seen int64 // the file size up to which hook has seen every event; -1 before the first write
	// unsynced is set while a line AppendLazy wrote may not be on disk.
	unsynced bool
	// known is the end of the file as this Log's last append left it.
	// While the file still has knownSize bytes nobody has appended since
	// (appends hold the file's lock), so the next append need not read
	// and parse the last line again. knownSize is -1 when unknown.
	known     tail
	knownSize int64
	// signer signs checkpoints (WithSigner); appended is set when this
	// Log appended since its last checkpoint, so that Close signs one.
	// chainID is the log's, once read.
	signer   *Signer
	appended bool
	chainID  string
	// runs are the live runs claimed through this Log (BeginRun); swept
	// is set once its first append has swept the abandoned ones.
	runs  map[string]*RunClaim
	swept bool
	// co counts repeated refusals (coalesce.go), when coalesce is set.
	co       coalescer
	coalesce bool
}

// Option configures a Log.
type Option func(*Log)

// WithClock makes the Log stamp events with now() instead of the time.
func WithClock(now func() time.Time) Option { return func(l *Log) { l.now = now } }

// WithCoalescing makes the Log count a run's repeated refusals instead of
// writing each (docs/audit.md, "Floods"). Close, or the run's End, writes
// the last counts: a Log that coalesces must be closed.
func WithCoalescing() Option { return func(l *Log) { l.coalesce = true } }

// WithHook makes the Log show every event to h and write what h adds.
func WithHook(h Hook) Option { return func(l *Log) { l.hook = h } }

// Open opens the audit log at path for appending, creating it (0600) and
// its directory (0700) when missing. It checks the end of the file: a
// file whose end is not an intact audit log is refused with ErrDamaged,
// before anything is run that would need logging. A symbolic link at path
// is refused: in a shared directory it could aim airlock's writes at
// another file.
func Open(path string, opts ...Option) (*Log, error) {
	if path == "" {
		return nil, errors.New("audit: no log file given")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("audit: %s is a symbolic link; give the file's real path", path)
		}
		return nil, fmt.Errorf("audit: %w", err)
	}
	l := &Log{f: f, path: path, now: time.Now, seen: -1, knownSize: -1}
	for _, o := range opts {
		o(l)
	}
	if err := l.check(errors.Is(statErr, fs.ErrNotExist)); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// check refuses a file that is not a regular file or whose end is not an
// intact log, and makes a new file's directory entry durable.
func (l *Log) check(created bool) error {
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("audit: %s is not a regular file", l.path)
	}
	if created {
		if err := syncDir(filepath.Dir(l.path)); err != nil {
			return err
		}
	}
	if err := lockFile(l.f); err != nil {
		return fmt.Errorf("audit: lock %s: %w", l.path, err)
	}
	defer unlockFile(l.f)
	if _, err := readTail(l.f, fi.Size()); err != nil {
		return fmt.Errorf("%w (in %s)", err, l.path)
	}
	return nil
}

// lockCurrent locks the log's file, and when the file at the log's path
// is no longer the one this Log has open (the log was rotated, see
// Rotate), opens and locks that one instead: every writer follows a
// rotation at its next append.
func (l *Log) lockCurrent() error {
	for range 16 {
		if err := lockFile(l.f); err != nil {
			return fmt.Errorf("audit: lock %s: %w", l.path, err)
		}
		mine, err := l.f.Stat()
		if err != nil {
			unlockFile(l.f)
			return fmt.Errorf("audit: %w", err)
		}
		now, err := os.Lstat(l.path)
		if err != nil || os.SameFile(mine, now) {
			return nil // gone: keep the file we hold (nothing here deletes a log)
		}
		unlockFile(l.f)
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|noFollow, 0)
		if err != nil {
			return fmt.Errorf("audit: reopen the rotated log: %w", err)
		}
		if l.unsynced {
			_ = syncData(l.f)
			l.unsynced = false
		}
		l.f.Close()
		l.f, l.knownSize, l.seen = f, -1, -1
	}
	return fmt.Errorf("audit: %s keeps being replaced", l.path)
}

// syncDir makes a new file's name durable in its directory.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer d.Close()
	if err := syncData(d); err != nil {
		return fmt.Errorf("audit: sync %s: %w", dir, err)
	}
	return nil
}

// Path returns the file the Log appends to.
func (l *Log) Path() string { return l.path }

// Close makes any line AppendLazy wrote durable, signs a checkpoint when
// the Log has a signer and appended since its last one, and closes the
// file. Appends after Close return ErrClosed.
func (l *Log) Close() error {
	ferr := l.flushCounts(true, "")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ErrClosed
	}
	if l.co.timer != nil {
		l.co.timer.Stop()
		l.co.timer = nil
	}
	err := ferr
	if l.signer != nil && l.appended && err == nil {
		if err = l.lockCurrent(); err == nil {
			_, err = l.checkpoint()
			unlockFile(l.f)
		}
	}
	if l.unsynced && err == nil {
		if err = syncData(l.f); err != nil {
			err = fmt.Errorf("audit: sync %s: %w", l.path, err)
		}
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Append writes ev at the end of the log and returns it as written, with
// Seq, TS, Prev and Hash set. When Append returns nil, the event is on
// disk. The caller fills in Kind, Decision, Reason and Context; an event
// with an unknown kind or decision, or without a reason, is refused.
//
// With WithCoalescing, a refusal that repeats one its run made within the
// second is counted instead of written (docs/audit.md, "Floods"): Append
// then returns ev as given, with Seq 0, and its count is written in a
// later count record.
func (l *Log) Append(ev Event) (Event, error) {
	ev, _, err := l.AppendAll(ev)
	return ev, err
}

// AppendAll is Append that also returns every line the call wrote, in
// file order: a chain_started record when the file was empty or an
// audit_repaired record when it ended with a damaged line, then ev, then
// the events the hook added after each of them (alerts, for the monitor).
func (l *Log) AppendAll(ev Event) (Event, []Event, error) {
	evs, at, err := l.append(ev, true)
	switch {
	case err != nil:
		return Event{}, nil, err
	case at < 0:
		return ev, evs, nil
	}
	return evs[at], evs, nil
}

// ErrDecisionNotLazy is returned by AppendLazy for a gate's decision.
var ErrDecisionNotLazy = errors.New("audit: a decision (allow, deny, escalate) must be durable before the action it allows: use Append")

// AppendLazy is AppendAll for an event that no action waits on, such as a
// sandbox's launch after its decision, or a connection's end: it is
// written at once, in its place in the chain, but reaches the disk with
// the next synced append or Close instead of before AppendLazy returns,
// which saves an fdatasync. A crash may lose it, never the chain: the
// file then ends at the last synced line. A gate's decision is refused
// (ErrDecisionNotLazy).
func (l *Log) AppendLazy(ev Event) (Event, []Event, error) {
	switch ev.Decision {
	case DecisionAllow, DecisionDeny, DecisionEscalate:
		return Event{}, nil, ErrDecisionNotLazy
	}
	evs, at, err := l.append(ev, false)
	switch {
	case err != nil:
		return Event{}, nil, err
	case at < 0:
		return ev, evs, nil
	}
	return evs[at], evs, nil
}

// append writes ev, synced unless lazy, and returns the lines written and
// ev's index in them, or -1 when ev was a refusal counted for a later
// count record (see coalesce.go).
func (l *Log) append(ev Event, sync bool) ([]Event, int, error) {
	if err := checkNew(&ev); err != nil {
		return nil, 0, err
	}
	return l.do(&ev, sync, false, "")
}

// flushCounts writes the pending count records (all of them with force,
// else those whose second is over; only run's when run is not "").
func (l *Log) flushCounts(force bool, run string) error {
	_, _, err := l.do(nil, false, force, run)
	return err
}

// do is one append: ev, when not nil, after the count records due.
func (l *Log) do(ev *Event, sync, force bool, run string) ([]Event, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil, 0, ErrClosed
	}
	if err := l.lockCurrent(); err != nil {
		return nil, 0, err
	}
	defer unlockFile(l.f)
	defer l.arm()
	now := l.now().UTC()
	counted, fresh := false, (*bucket)(nil)
	if ev != nil && l.coalesce && coalescable(ev) {
		counted, fresh = l.co.count(ev, now)
	}
	dues, due := l.co.due(now, force, run)
	if (ev == nil || counted) && len(dues) == 0 {
		return nil, -1, nil
	}
	fi, err := l.f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	size := fi.Size()
	t := l.known
	if size != l.knownSize {
		if t, err = readTail(l.f, size); err != nil {
			return nil, 0, fmt.Errorf("%w (in %s)", err, l.path)
		}
	}
	if err := l.catchUp(size, now); err != nil {
		return nil, 0, err
	}
	b := batch{tail: t, now: now, hook: l.hook}
	if size == 0 {
		id, err := newChainID()
		if err != nil {
			return nil, 0, err
		}
		b.add(Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: reasonChainStarted,
			Context: Context{Event: EventChainStarted, ChainID: id}})
	}
	if t.damaged != nil {
		if !t.newline {
			b.buf = append(b.buf, '\n')
		}
		sum := sha256.Sum256(t.damaged)
		b.add(Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: reasonRepaired,
			Context: Context{Event: EventAuditRepaired, RepairedBytes: int64(len(t.damaged)),
				RepairedSHA256: hex.EncodeToString(sum[:])}})
	}
	var held []*os.File
	if !l.swept {
		var abandoned []Event
		abandoned, held = l.sweepRuns()
		for _, a := range abandoned {
			b.add(a)
		}
	}
	for _, d := range dues {
		b.add(d)
	}
	at := -1
	if ev != nil && !counted {
		at = b.add(*ev)
	}
	if b.err == nil {
		b.err = l.write(b.buf, size, sync)
	}
	sweptRuns(held, b.err == nil)
	if b.err != nil {
		l.co.failed(fresh)
		l.forget()
		return nil, 0, b.err
	}
	due()
	if fresh != nil {
		fresh.first = b.out[at]
	}
	l.known, l.knownSize = tail{seq: b.seq, hash: b.hash}, size+int64(len(b.buf))
	l.appended, l.swept = true, true
	for _, w := range b.out {
		if c := l.runs[w.Context.RunID]; c != nil && w.Context.RunID != "" {
			c.seen(w)
		}
	}
	if l.hook != nil {
		l.seen = size + int64(len(b.buf))
	}
	return b.out, at, nil
}

// arm sets the timer that writes the count records of a second that no
// later append writes. It runs with l.mu held.
func (l *Log) arm() {
	if l.f == nil || l.co.timer != nil || !l.co.pending() {
		return
	}
	l.co.timer = time.AfterFunc(coalesceWindow, func() {
		l.mu.Lock()
		l.co.timer = nil
		l.mu.Unlock()
		_ = l.flushCounts(false, "")
	})
}

// write appends buf with one write and, with sync, syncs it (and every
// line written lazily before it). When the write fails or comes up short
// (a full disk), or the sync fails, it cuts the file back to size, so
// that the file holds neither a half line nor a record its caller was
// told was not written; if even the cut fails, the next writer repairs
// what is left (see the package documentation).
func (l *Log) write(buf []byte, size int64, sync bool) error {
	_, err := l.f.Write(buf)
	switch {
	case err != nil:
		err = fmt.Errorf("audit: %w", err)
	case !sync:
		l.unsynced = true
		return nil
	default:
		if err = syncData(l.f); err == nil {
			l.unsynced = false
			return nil
		}
		err = fmt.Errorf("audit: sync %s: %w", l.path, err)
	}
	if terr := l.f.Truncate(size); terr != nil {
		return fmt.Errorf("%w (and cutting the partial line failed: %v)", err, terr)
	}
	return err
}

// forget is called after a failed append: the end of the file is no
// longer known, and a hook that saw the batch's events, which are not in
// the file, is reset (Resetter) and shown the file's recent events again
// on the next append.
func (l *Log) forget() {
	l.knownSize = -1
	if r, ok := l.hook.(Resetter); ok {
		r.Reset()
		l.seen = -1
	}
}

// catchUp shows the hook the events that other writers appended since
// this Log last wrote, or, the first time, those within its lookback.
func (l *Log) catchUp(size int64, now time.Time) error {
	if l.hook == nil {
		return nil
	}
	if l.seen < 0 || size < l.seen || size-l.seen > seedMaxBytes {
		sift, _ := l.hook.(Sifter)
		evs, err := recentEvents(l.f, size, now.Add(-l.hook.Lookback()), sift)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			l.hook.Seen(ev)
		}
		l.seen = size
		return nil
	}
	if size == l.seen {
		return nil
	}
	buf := make([]byte, size-l.seen)
	if _, err := l.f.ReadAt(buf, l.seen); err != nil {
		return fmt.Errorf("audit: read %s: %w", l.path, err)
	}
	sift, _ := l.hook.(Sifter)
	for len(buf) > 0 {
		line, rest, _ := bytes.Cut(buf, []byte{'\n'})
		buf = rest
		if _, skip := sifted(line, sift); skip {
			continue
		}
		if ev, err := ParseLine(line); err == nil {
			l.hook.Seen(ev)
		}
	}
	l.seen = size
	return nil
}

// batch builds the lines of one Append, chaining each onto the last.
type batch struct {
	tail
	now  time.Time
	hook Hook
	buf  []byte
	out  []Event
	err  error
}

// add chains ev, encodes it, shows it to the hook and adds what the hook
// returns. It returns ev's index in out.
func (b *batch) add(ev Event) int {
	at := len(b.out)
	b.put(ev)
	if b.hook != nil && b.err == nil {
		for _, next := range b.hook.Follow(b.out[at]) {
			if err := checkNew(&next); err != nil {
				b.err = fmt.Errorf("audit: hook: %w", err)
				break
			}
			b.put(next)
		}
	}
	return at
}

func (b *batch) put(ev Event) {
	if b.err != nil {
		return
	}
	ev.Seq, ev.TS, ev.Prev = b.seq+1, b.now, b.hash
	line, err := encodeFitting(&ev)
	if err == nil {
		err = roundTrips(&ev, line)
	}
	if err != nil {
		b.err = err
		return
	}
	b.buf = append(b.buf, line...)
	b.out = append(b.out, ev)
	b.seq, b.hash = ev.Seq, ev.Hash
}

// checkNew refuses an event that a writer must not write.
func checkNew(ev *Event) error {
	switch {
	case !ev.Kind.Valid():
		return fmt.Errorf("audit: event has unknown kind %s", shown(string(ev.Kind)))
	case !validDecision(ev.Decision):
		return fmt.Errorf("audit: event has unknown decision %s", shown(ev.Decision))
	case ev.Reason == "":
		return errors.New("audit: event has no reason")
	case ev.Context.ChainID != "" || ev.Context.RepairedSHA256 != "" || ev.Context.RepairedBytes != 0 ||
		ev.Context.Event == EventChainStarted || ev.Context.Event == EventAuditRepaired:
		return errors.New("audit: chain_started and audit_repaired records are written by the log itself")
	}
	for k := range ev.Context.Details {
		if !utf8.ValidString(k) {
			return fmt.Errorf("audit: the details key %s is not valid UTF-8 (keys are airlock's own names)", shown(k))
		}
	}
	return nil
}

func newChainID() (string, error) {
	var b [chainIDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("audit: chain id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// NotWritten is the error of a writer whose record ev the log refused
// (err): "the egress allow record was not written: …", naming the record
// by its kind and its lifecycle event or decision, never by its contents.
func NotWritten(ev Event, err error) error {
	name := ev.Context.Event
	if name == "" {
		name = ev.Decision
	}
	return fmt.Errorf("the %s %s record was not written: %w", ev.Kind, name, err)
}
