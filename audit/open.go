package audit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Opening a log: the file made or checked, and the records that open a
// write to it, chain_started on an empty file and audit_repaired after a
// torn last line (see the package documentation, "Torn lines").

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
