package audit

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Opening a log: the file made or checked, its end read (a torn last
// line found), and the records that open a write to it: chain_started on
// an empty file, audit_repaired after a torn last line (see the package
// documentation, "Torn lines").

// chainIDLen is the length of a chain id in hex digits (128 bits).
const chainIDLen = 32

// Fixed reasons of the records the writer adds itself.
const (
	reasonChainStarted = "audit log started: every later line is chained to this one"
	reasonRepaired     = "the previous line was damaged (an airlock process stopped mid-write, or the file " +
		"was edited); it is kept as evidence outside the chain, which continues from the line before it"
)

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

// begin adds the records that open b: chain_started, with a new chain
// id, when the file is empty; audit_repaired, when it ends with a damaged
// line, which is first ended with a newline when it has none.
func begin(b *batch) error {
	if b.size == 0 {
		var id [chainIDLen / 2]byte
		if _, err := rand.Read(id[:]); err != nil {
			return fmt.Errorf("audit: chain id: %w", err)
		}
		b.add(Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: reasonChainStarted,
			Context: Context{Event: EventChainStarted, ChainID: hex.EncodeToString(id[:])}})
	}
	if b.damaged != nil {
		if !b.newline {
			b.buf = append(b.buf, '\n')
		}
		sum := sha256.Sum256(b.damaged)
		b.add(Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: reasonRepaired,
			Context: Context{Event: EventAuditRepaired, RepairedBytes: int64(len(b.damaged)),
				RepairedSHA256: hex.EncodeToString(sum[:])}})
	}
	return nil
}

// ErrDamaged is matched (errors.Is) by the error of a writer that will not
// append to a file: its last two lines are both damaged, or its last line
// is damaged and no intact event comes before it, or it is not an audit
// log at all. A crash mid-write damages one line; this is something else,
// and airlock does not chain onto it. Run "airlock audit verify".
var ErrDamaged = errors.New("the file's end is not an intact audit log")

// tail is what a writer needs to know about the end of the file.
type tail struct {
	seq  uint64
	hash string
	// damaged is a damaged final line (without its newline) that the next
	// write must close off; nil when the file ends with an intact event.
	damaged []byte
	// newline is false when damaged was cut before its newline.
	newline bool
}

// readTail reads the end of a file of the given size: the last line, and
// when that is damaged the line before it. It reads from the end, a few
// kilobytes for a healthy file, never more than two lines' limit.
func readTail(f *os.File, size int64) (tail, error) {
	if size == 0 {
		return tail{hash: Genesis}, nil
	}
	lines, partial, err := lastLines(f, size, 1)
	if err != nil {
		return tail{}, err
	}
	last := lines[len(lines)-1]
	if !partial {
		if ev, err := ParseLine(last); err == nil {
			return tail{seq: ev.Seq, hash: ev.Hash}, nil
		}
	}
	lines, _, err = lastLines(f, size, 2)
	if err != nil {
		return tail{}, err
	}
	if len(lines) < 2 {
		return tail{}, fmt.Errorf("audit: %w: it holds no intact event before its damaged last line", ErrDamaged)
	}
	ev, err := ParseLine(lines[0])
	if err != nil {
		return tail{}, fmt.Errorf("audit: %w: its last two lines are damaged", ErrDamaged)
	}
	return tail{seq: ev.Seq, hash: ev.Hash, damaged: slices.Clone(last), newline: !partial}, nil
}

// lastLines returns the last n lines of the file (fewer when the file has
// fewer), in file order and without newlines, and whether the last one
// has no newline. It reads backwards in growing chunks and refuses to read
// more than n lines at the line limit.
func lastLines(f *os.File, size int64, n int) ([][]byte, bool, error) {
	limit := int64(n) * (MaxLineBytes + 1)
	for chunk := int64(4 << 10); ; chunk *= 4 {
		off := max(0, size-chunk)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, fmt.Errorf("audit: read the end of the log: %w", err)
		}
		partial := buf[len(buf)-1] != '\n'
		body := buf
		if !partial {
			body = buf[:len(buf)-1]
		}
		// Each newline in body ends one line before the last; a line is
		// whole when a newline precedes it or it starts the file.
		var lines [][]byte
		for end := len(body); len(lines) < n; {
			i := bytes.LastIndexByte(body[:end], '\n')
			if i < 0 {
				if off == 0 {
					lines = append(lines, body[:end])
				}
				break
			}
			lines = append(lines, body[i+1:end])
			end = i
		}
		if len(lines) == n || off == 0 {
			slices.Reverse(lines)
			return lines, partial, nil
		}
		if size-off > limit {
			return nil, false, fmt.Errorf("audit: %w: its last lines are longer than the line limit", ErrDamaged)
		}
	}
}
