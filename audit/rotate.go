package audit

import (
	"errors"
	"fmt"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Rotation (docs/audit.md, "Rotation"): "airlock audit rotate" moves the
// log to FILE.N (N its last seq) and starts a new FILE whose first line,
// chain_continued, carries on the chain and the tree: its seq is N+1, its
// prev the last line's hash, its context the log's chain id, the rotated
// file's name (details "previous") and the tree's frontier at N (details
// "treeFrontier": the roots of the complete subtrees, hex, in order), so
// that the new file alone still gives the tree's root, and a checkpoint
// signed later can be checked against it. The swap is one
// renameat2(RENAME_EXCHANGE): the path always names a log, and every
// writer follows the rotation at its next append (lockCurrent).

// EventChainContinued is the first line of a rotated log's next file.
const EventChainContinued = "chain_continued"

const reasonContinued = "audit log continued from the previous file: every later line is chained to its last"

// maxRotated bounds how many earlier files a rebuild reads.
const maxRotated = 10000

// Rotate moves the log's file to PATH.N, N its last seq, and continues the
// log in a new file at its path; it returns the rotated file's path. With
// a signer, a checkpoint is signed just before and just after. Pending
// count records are written to the old file first.
func (l *Log) Rotate() (string, error) {
	if err := l.flushCounts(true, ""); err != nil {
		return "", err
	}
	if err := l.lock(); err != nil {
		return "", err
	}
	defer l.unlock()
	rotated, err := l.rotate()
	if err != nil {
		return "", err
	}
	if l.signer != nil {
		if err := l.lockCurrent(); err != nil { // the new file
			return rotated, err
		}
		if _, err := l.checkpoint(); err != nil {
			return rotated, fmt.Errorf("audit: the checkpoint after the rotation: %w", err)
		}
	}
	return rotated, nil
}

// rotate is Rotate with the old file locked.
func (l *Log) rotate() (string, error) {
	fi, err := l.f.Stat()
	if err != nil {
		return "", fmt.Errorf("audit: %w", err)
	}
	size := fi.Size()
	tl, err := readTail(l.f, size)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w (in %s)", err, l.path)
	case size == 0:
		return "", errors.New("audit: an empty log has nothing to rotate")
	case tl.damaged != nil:
		return "", errors.New("audit: the log ends with a damaged line: let a writer repair it first")
	}
	if err := syncData(l.f); err != nil {
		return "", fmt.Errorf("audit: sync %s: %w", l.path, err)
	}
	l.unsynced = false
	chainID, err := l.chain()
	if err != nil {
		return "", err
	}
	if l.signer != nil {
		if _, err := l.checkpoint(); err != nil {
			return "", fmt.Errorf("audit: the checkpoint before the rotation: %w", err)
		}
	}
	t, err := openSideTree(l.path, chainID)
	if err != nil {
		return "", err
	}
	defer t.close()
	if err := syncTree(l.f, size, t, false); err != nil {
		return "", err
	}
	if uint64(t.n) != tl.seq {
		return "", fmt.Errorf("audit: the tree holds %d records, the log %d", t.n, tl.seq)
	}
	frontier, err := t.ReadHashes(frontierIndexes(t.n))
	if err != nil {
		return "", err
	}
	rotated := l.path + "." + strconv.FormatUint(tl.seq, 10)
	if _, err := os.Lstat(rotated); err == nil {
		return "", fmt.Errorf("audit: %s exists already", rotated)
	}
	cont := Event{Seq: tl.seq + 1, TS: l.now().UTC(), Kind: KindLifecycle, Decision: DecisionInfo, Reason: reasonContinued,
		Context: Context{Event: EventChainContinued, ChainID: chainID, Details: map[string]string{
			"previous": filepath.Base(rotated), "treeFrontier": frontierText(frontier)}}, Prev: tl.hash}
	line, err := encodeLine(&cont)
	if err == nil {
		err = roundTrips(&cont, line)
	}
	if err != nil {
		return "", err
	}
	tmp := l.path + ".rotating"
	if err := writeNew(tmp, line, 0o600, true); err != nil {
		return "", fmt.Errorf("audit: rotate: %w", err)
	}
	if err := exchange(tmp, l.path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("audit: rotate: %w", err)
	}
	if err := os.Rename(tmp, rotated); err != nil {
		return "", fmt.Errorf("audit: rotate: the old log is at %s: %w", tmp, err)
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		return "", err
	}
	if err := t.cut(t.n, 0, t.head); err != nil {
		return "", err
	}
	if err := t.add(line[:len(line)-1], int64(len(line)), parseHexHash(cont.Hash)); err != nil {
		return "", err
	}
	return rotated, t.flush()
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

// writeNew creates path (O_EXCL, never through a link) holding data,
// synced when sync; it is removed when that fails.
func writeNew(path string, data []byte, perm os.FileMode, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if sync && err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// frontierText writes a tree frontier: hex hashes, space-separated.
func frontierText(hs []tlog.Hash) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = hexHash(h)
	}
	return strings.Join(parts, " ")
}

// continuedFrontier reads the frontier a chain_continued record carries
// for the tree of its seq-1 leaves.
func continuedFrontier(ev *Event) (map[int64]tlog.Hash, error) {
	n := int64(ev.Seq) - 1
	idx := frontierIndexes(n)
	parts := strings.Fields(ev.Context.Details["treeFrontier"])
	if len(parts) != len(idx) {
		return nil, fmt.Errorf("the continuation at seq %d carries %d frontier hashes, not %d", ev.Seq, len(parts), len(idx))
	}
	m := make(map[int64]tlog.Hash, len(idx))
	for i, p := range parts {
		if !IsHash(p) {
			return nil, fmt.Errorf("the continuation at seq %d carries a frontier hash that is not one", ev.Seq)
		}
		m[idx[i]] = parseHexHash(p)
	}
	return m, nil
}

// isContinuation reports whether ev is a chain_continued record.
func isContinuation(ev *Event) bool {
	return ev.Kind == KindLifecycle && ev.Context.Event == EventChainContinued && isHex(ev.Context.ChainID, chainIDLen)
}

// fileStart returns the number of records before f's first line: 0 for a
// log's first file, N for one that continues from seq N.
func fileStart(f *os.File) (int64, *Event, error) {
	lr := newLineReader(io.NewSectionReader(f, 0, MaxLineBytes+1), MaxLineBytes)
	line, err := lr.next()
	if err != nil {
		return 0, nil, errors.New("audit: the log has no first line")
	}
	ev, err := ParseLine(line)
	if err != nil {
		return 0, nil, fmt.Errorf("audit: the log's first line: %w", err)
	}
	if isContinuation(&ev) {
		return int64(ev.Seq) - 1, &ev, nil
	}
	return 0, &ev, nil
}

// predecessors lists the earlier files of the log at path, oldest first,
// as far back as they are at hand (each named by its successor's
// continuation record, in the same directory).
func predecessors(path string) []string {
	var out []string
	cur := path
	for range maxRotated {
		f, _, err := hostfile.Open(cur) // a FIFO in the log's directory is not waited on
		if err != nil {
			break
		}
		_, first, err := fileStart(f)
		f.Close()
		if err != nil || !isContinuation(first) {
			break
		}
		prev := first.Context.Details["previous"]
		if prev == "" || strings.ContainsRune(prev, '/') || prev == "." || prev == ".." {
			break
		}
		cur = filepath.Join(filepath.Dir(path), prev)
		if _, err := os.Lstat(cur); err != nil {
			break
		}
		out = append([]string{cur}, out...)
	}
	return out
}
