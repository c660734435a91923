package audit

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// The chain writer: a Log appends a batch of records to the file's hash
// chain under its mutex and the file's flock, with one O_APPEND write and
// an fdatasync (F_FULLFSYNC on macOS), and cuts the file back when either
// fails. The rest of an append is layered on it, each in its own file:
// opening a log, its chain start and torn-line repair (open.go), the
// abandoned-run sweep (sweep.go), coalescing (coalesce.go), claims
// (claim.go), the hook's catch-up (catchup.go), rotation (rotate.go) and
// checkpoints (checkpoint.go); append.go puts them together.

// ErrClosed is returned by Append on a closed Log.
var ErrClosed = errors.New("audit: log is closed")

// Log appends events to an audit file. It is safe for concurrent use, and
// several Logs, in one process or many, may append to the same file: each
// Append locks the file (see the package documentation).
type Log struct {
	mu   sync.Mutex
	f    *os.File // nil once closed
	path string
	now  func() time.Time
	// unsynced is set while a line AppendLazy wrote may not be on disk.
	unsynced bool
	// known is the end of the file as this Log's last append left it.
	// While the file still has knownSize bytes nobody has appended since
	// (appends hold the file's lock), so the next append need not read
	// and parse the last line again. knownSize is -1 when unknown.
	known     tail
	knownSize int64

	// The layers' state, under mu too.
	hook Hook
	seen int64 // the file size up to which hook has seen every event; -1 before the first write
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
	co    coalescer
}

// Option configures a Log.
type Option func(*Log)

// WithClock makes the Log stamp events with now() instead of the time.
func WithClock(now func() time.Time) Option { return func(l *Log) { l.now = now } }

// Path returns the file the Log appends to.
func (l *Log) Path() string { return l.path }

// lock takes the Log's mutex and its file's lock, following a rotation
// (lockCurrent).
func (l *Log) lock() error {
	l.mu.Lock()
	err := ErrClosed
	if l.f != nil {
		err = l.lockCurrent()
	}
	if err != nil {
		l.mu.Unlock()
	}
	return err
}

// unlock releases what lock took.
func (l *Log) unlock() {
	unlockFile(l.f)
	l.mu.Unlock()
}

// Close makes any line AppendLazy wrote durable, signs a checkpoint when
// the Log has a signer and appended since its last one, and closes the
// file. Appends after Close return ErrClosed.
func (l *Log) Close() error {
	err := l.flushCounts(true, "")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ErrClosed
	}
	l.co.stop()
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

// commit appends, with the Log locked, the records that fill adds to a
// batch chained onto the file's last line: one write, synced unless lazy.
// When fill or the batch fails, nothing is written.
func (l *Log) commit(now time.Time, sync bool, fill func(*batch) error) (*batch, error) {
	fi, err := l.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	b := &batch{tail: l.known, size: fi.Size(), now: now, hook: l.hook}
	if b.size != l.knownSize {
		if b.tail, err = readTail(l.f, b.size); err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, l.path)
		}
	}
	if err = fill(b); err == nil {
		err = b.err
	}
	if err == nil {
		err = l.write(b.buf, b.size, sync)
	}
	if err != nil {
		l.knownSize = -1
		return nil, err
	}
	l.known, l.knownSize = tail{seq: b.seq, hash: b.hash}, b.size+int64(len(b.buf))
	return b, nil
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

// batch builds the lines of one append, chaining each onto the last, to
// be written at size.
type batch struct {
	tail
	size int64
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
