package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// auditLog stands for airlock's audit log (docs/audit.md): records
// appended to a file and fdatasync'd, and a checkpoint signed after the
// run and kept in place in a two-slot file (audit/kept.go: pwrite and
// fdatasync, one sync). Left out: the records' hash chain, the log's tree
// file and lock, and the look back over the log's end that airlock's
// monitor makes.
type auditLog struct {
	dir   string
	f     *os.File
	key   ed25519.PrivateKey
	keyed chan error // the key loaded, or why not
	line  []byte     // the last record, whose hash the checkpoint signs
}

// decide appends the decision and syncs it, in a goroutine; the channel
// says when it is durable. Then the goroutine loads the signing key
// (building Go's Ed25519 tables, about 1 ms of CPU), beside the run, as
// airlock's audit.PrepareSigner does.
func (l *auditLog) decide(argv []string) <-chan error {
	durable := make(chan error, 1)
	l.keyed = make(chan error, 1)
	go func() {
		f, err := os.OpenFile(l.dir+"/audit.jsonl", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			l.f = f
			err = l.append(record("decision", fmt.Sprintf(`"allowed":true,"reason":"rule true of tool bench allows %q"`, strings.Join(argv, " "))))
		} else {
			err = fmt.Errorf("audit: %w", err)
		}
		durable <- err
		if err != nil {
			l.keyed <- err
			return
		}
		seed, err := os.ReadFile(l.dir + "/key")
		if err == nil && len(seed) != ed25519.SeedSize {
			err = fmt.Errorf("%d bytes, not %d", len(seed), ed25519.SeedSize)
		}
		if err != nil {
			l.keyed <- fmt.Errorf("audit: signing key: %w", err)
			return
		}
		l.key = ed25519.NewKeyFromSeed(seed)
		l.keyed <- nil
	}()
	return durable
}

// finish appends the outcome and syncs it, then signs and keeps the
// checkpoint.
func (l *auditLog) finish(code int) error {
	defer l.f.Close()
	if err := <-l.keyed; err != nil {
		return err
	}
	if err := l.append(record("outcome", fmt.Sprintf(`"exitCode":%d,"killedBy":""`, code))); err != nil {
		return err
	}
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	sum := sha256.Sum256(l.line)
	text := fmt.Sprintf("floor/bench\n%d\n%s\n", fi.Size(), hex.EncodeToString(sum[:]))
	return keep(l.dir+"/checkpoint", text+hex.EncodeToString(ed25519.Sign(l.key, []byte(text)))+"\n")
}

// append writes one record and fdatasyncs the log.
func (l *auditLog) append(line []byte) error {
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("audit: append: %w", err)
	}
	if err := unix.Fdatasync(int(l.f.Fd())); err != nil {
		return fmt.Errorf("audit: fdatasync: %w", err)
	}
	l.line = line
	return nil
}

// record is a JSON line of about 600 bytes, the size of airlock's run
// records (padded to it).
func record(kind, fields string) []byte {
	b := fmt.Appendf(nil, `{"v":1,"time":%q,"kind":%q,"tool":"bench","pid":%d,%s,"prev":"%064x","pad":"`,
		time.Now().UTC().Format(time.RFC3339Nano), kind, os.Getpid(), fields, 0)
	for len(b) < 597 {
		b = append(b, 'x')
	}
	return append(b, "\"}\n"...)
}

// keep writes text into the slot of path that the last write did not
// use, and syncs it: a counter picks the newer slot on reading.
func keep(path, text string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: checkpoint: %w", err)
	}
	defer f.Close()
	// The newer slot's counter; a slot never written reads as zeroes.
	var heads [2 * 4096]byte
	if _, err := f.ReadAt(heads[:], 0); err != nil && err != io.EOF {
		return fmt.Errorf("audit: checkpoint: %w", err)
	}
	count := max(binary.BigEndian.Uint64(heads[:]), binary.BigEndian.Uint64(heads[4096:])) + 1
	slot := make([]byte, 4096)
	binary.BigEndian.PutUint64(slot, count)
	copy(slot[8:], text)
	if _, err := f.WriteAt(slot, int64(count%2)*4096); err != nil {
		return fmt.Errorf("audit: checkpoint: %w", err)
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("audit: checkpoint: fdatasync: %w", err)
	}
	return nil
}
