package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/mod/sumdb/tlog"
)

// RecordProof proves that one line is a record of a log: the line, its
// index in the tree (its seq minus one) and the RFC 6962 inclusion proof
// (audit path) against a checkpoint, as tlog.CheckRecord takes it.
type RecordProof struct {
	Index int64            `json:"index"`
	Line  string           `json:"line"`
	Proof tlog.RecordProof `json:"proof"`
}

// RunProof proves a run's records against the checkpoint signed at the
// end of the run: what a run's result carries (docs/audit.md, "Proofs").
// Anyone with the public key checks it offline, with airlock ("airlock
// audit verify-proof") or with golang.org/x/mod/sumdb/{note,tlog} alone.
type RunProof struct {
	// Checkpoint is the signed note.
	Checkpoint string `json:"checkpoint"`
	// PublicKey is the key that signed it. It is here to say which key;
	// a verifier must hold the key already, from a source it trusts.
	PublicKey string `json:"publicKey"`
	// Records are the run's records, in order, with their proofs: at most
	// MaxProvenRecords; Omitted counts those left out (prove them with
	// "airlock audit prove").
	Records []RecordProof `json:"records"`
	Omitted int           `json:"omitted,omitempty"`
}

// MaxProvenRecords bounds a RunProof: the first and the last halves of a
// run's records are proven.
const MaxProvenRecords = 64

// Prove returns the inclusion proofs of evs, events this Log wrote, in the
// tree of checkpoint cp. Each proof is checked against cp before it is
// returned; a tree file that gives a wrong one is rebuilt from the log.
func (l *Log) Prove(cp Checkpoint, evs []Event) ([]RecordProof, error) {
	lines := make([][]byte, len(evs))
	for i := range evs {
		ev := evs[i]
		line, err := encodeLine(&ev)
		if err != nil || ev.Hash != evs[i].Hash {
			return nil, fmt.Errorf("audit: prove seq %d: the event is not as the log wrote it", evs[i].Seq)
		}
		lines[i] = line[:len(line)-1]
	}
	return locked(l, func(size int64) ([]RecordProof, error) {
		return proveLines(l.f, size, l.path, cp, lines)
	})
}

// ProveRun returns the proofs, in the tree of cp, of the records of the
// log whose context names runID (at most MaxProvenRecords, the first and
// the last halves, and how many were left out).
func (l *Log) ProveRun(cp Checkpoint, runID string) ([]RecordProof, int, error) {
	omitted := 0
	out, err := locked(l, func(size int64) ([]RecordProof, error) {
		var lines [][]byte
		lr := newLineReader(io.NewSectionReader(l.f, 0, size), MaxLineBytes)
		for {
			line, err := lr.next()
			if err != nil {
				break
			}
			if ev, err := ParseLine(line); err == nil && ev.Context.RunID == runID && int64(ev.Seq) <= cp.Size {
				lines = append(lines, slices.Clone(line))
			}
		}
		if len(lines) == 0 {
			return nil, fmt.Errorf("audit: prove: no record of run %s in the checkpoint's tree", shown(runID))
		}
		lines, omitted = bounded(lines)
		return proveLines(l.f, size, l.path, cp, lines)
	})
	return out, omitted, err
}

// bounded keeps the first and the last MaxProvenRecords/2 of lines.
func bounded[T any](lines []T) ([]T, int) {
	if len(lines) <= MaxProvenRecords {
		return lines, 0
	}
	h := MaxProvenRecords / 2
	return append(slices.Clip(lines[:h]), lines[len(lines)-h:]...), len(lines) - MaxProvenRecords
}

// locked runs fn with l's file locked and its size.
func locked[T any](l *Log, fn func(size int64) (T, error)) (T, error) {
	var zero T
	if err := l.lock(); err != nil {
		return zero, err
	}
	defer l.unlock()
	fi, err := l.f.Stat()
	if err != nil {
		return zero, fmt.Errorf("audit: %w", err)
	}
	return fn(fi.Size())
}

// proveLines proves lines (without newlines) of the log f in the tree of
// cp, from the log's tree file, rebuilt once when it gives a wrong proof.
func proveLines(f *os.File, size int64, path string, cp Checkpoint, lines [][]byte) ([]RecordProof, error) {
	t, err := openSideTree(path, OriginChain(cp.Origin))
	if err != nil {
		return nil, err
	}
	defer t.close()
	for scratch := false; ; scratch = true {
		if err := syncTree(f, size, t, scratch); err != nil {
			return nil, err
		}
		out, err := proveAll(t, cp, lines)
		if err == nil || scratch {
			return out, err
		}
	}
}

func proveAll(t *sideTree, cp Checkpoint, lines [][]byte) ([]RecordProof, error) {
	if t.n < cp.Size {
		return nil, fmt.Errorf("audit: prove: the log holds %d records, fewer than the checkpoint's %d", t.n, cp.Size)
	}
	out := make([]RecordProof, 0, len(lines))
	for _, line := range lines {
		ev, err := ParseLine(line)
		if err != nil {
			return nil, fmt.Errorf("audit: prove: %w", err)
		}
		idx := int64(ev.Seq) - 1
		if idx >= cp.Size {
			return nil, fmt.Errorf("audit: prove: seq %d is after the checkpoint (size %d)", ev.Seq, cp.Size)
		}
		p, err := tlog.ProveRecord(cp.Size, idx, t)
		if err == nil {
			err = tlog.CheckRecord(p, cp.Size, cp.Root, idx, LeafHash(line))
		}
		if err != nil {
			return nil, fmt.Errorf("audit: prove seq %d: %w", ev.Seq, err)
		}
		out = append(out, RecordProof{Index: idx, Line: string(line), Proof: p})
	}
	return out, nil
}

// VerifyRunProof checks p offline with the public key vkey: the checkpoint's
// signature, and each record's inclusion in its tree; each line must be an
// intact audit line whose seq is its index plus one. It returns the
// checkpoint and the records' events.
func VerifyRunProof(p RunProof, vkey string) (Checkpoint, []Event, error) {
	cp, err := ParseCheckpoint([]byte(p.Checkpoint), vkey)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	if len(p.Records) == 0 {
		return cp, nil, errors.New("audit: the proof holds no record")
	}
	evs := make([]Event, 0, len(p.Records))
	for i, r := range p.Records {
		line := []byte(r.Line)
		ev, err := ParseLine(line)
		switch {
		case err != nil:
			return cp, nil, fmt.Errorf("audit: record %d: %w", i, err)
		case r.Index < 0 || int64(ev.Seq) != r.Index+1:
			return cp, nil, fmt.Errorf("audit: record %d: index %d is not its seq %d less one", i, r.Index, ev.Seq)
		case r.Index >= cp.Size:
			return cp, nil, fmt.Errorf("audit: record %d: index %d is outside the checkpoint's tree (size %d)", i, r.Index, cp.Size)
		}
		if err := tlog.CheckRecord(r.Proof, cp.Size, cp.Root, r.Index, LeafHash(line)); err != nil {
			return cp, nil, fmt.Errorf("audit: record %d (seq %d) is not in the checkpoint's tree: %w", i, ev.Seq, err)
		}
		evs = append(evs, ev)
	}
	return cp, evs, nil
}
