package runbook

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/airlock-sandbox/airlock/audit"
)

// tailSearch is how far from the end of the audit file the launch line is
// looked for; it is the last line or close to it.
const tailSearch = 4 << 20

// chainWatch re-verifies the audit log from the launch event on. The
// chain before the launch is not this run's to judge (the log may be
// years old); from the launch line on, every line must be intact and
// chained to the one before it, so an edit, a removal, an insertion or a
// reordering of anything this run wrote is seen.
//
// A check re-hashes the bytes it verified before (one SHA-256 over them,
// so any change to them is seen) and parses only the lines added since:
// its cost stays near constant as the plan goes on.
type chainWatch struct {
	path   string
	fi     os.FileInfo // the file at launch: a replaced file is a break
	offset int64       // where the launch line starts

	end  int64    // the verified bytes are [offset, end)
	sum  [32]byte // their SHA-256
	seq  uint64   // the last verified event's seq and hash
	hash string
}

// watchChain finds the launch event launched in the log at path.
func watchChain(path string, launched audit.Event) (*chainWatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("runbook: audit chain: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("runbook: audit chain: %w", err)
	}
	from := max(0, fi.Size()-tailSearch)
	buf := make([]byte, fi.Size()-from)
	if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("runbook: audit chain: %w", err)
	}
	needle := []byte(`,"hash":"` + launched.Hash + `"}` + "\n")
	end := bytes.LastIndex(buf, needle)
	if end < 0 {
		return nil, errors.New("runbook: audit chain: the launch event is not near the end of the log")
	}
	end += len(needle) // past the newline
	start := bytes.LastIndexByte(buf[:end-1], '\n') + 1
	return &chainWatch{path: path, fi: fi, offset: from + int64(start), end: from + int64(end),
		sum: sha256.Sum256(buf[start:end]), seq: launched.Seq, hash: launched.Hash}, nil
}

// check verifies the log from the launch line to its end. It returns nil
// when the chain holds, or an error saying what broke. A final line
// without its newline is left for the next check: another writer may be
// in the middle of it (a crashed one is repaired by the next writer, and
// the repair is checked then).
func (w *chainWatch) check() error {
	f, err := os.Open(w.path)
	if err != nil {
		return fmt.Errorf("the audit log cannot be opened: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("the audit log cannot be read: %w", err)
	}
	if !os.SameFile(fi, w.fi) {
		return errors.New("the audit log was replaced by another file since the launch")
	}
	if fi.Size() < w.end {
		return errors.New("the audit log was cut: lines written since the launch are gone")
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, w.offset, w.end-w.offset)); err != nil {
		return fmt.Errorf("the audit log cannot be read: %w", err)
	}
	if !bytes.Equal(h.Sum(nil), w.sum[:]) {
		return errors.New("lines written since the launch (the launch event included) were changed, removed, inserted or moved")
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, w.end, fi.Size()-w.end), 64<<10)
	seq, head, end := w.seq, w.hash, w.end
	var damaged []byte
	for n := 1; ; n++ {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			if damaged != nil {
				return errors.New("a line written since the launch is damaged and no repair record follows it")
			}
			break
		}
		if err != nil {
			return fmt.Errorf("a line written since the launch: %w", err)
		}
		ev, perr := audit.ParseLine(line)
		if perr != nil {
			if damaged != nil {
				return fmt.Errorf("a line written since the launch: %v", perr)
			}
			damaged = bytes.Clone(line)
			h.Write(line)
			h.Write([]byte{'\n'})
			continue
		}
		if damaged != nil {
			sum := sha256.Sum256(damaged)
			if ev.Context.Event != audit.EventAuditRepaired || ev.Context.RepairedBytes != int64(len(damaged)) ||
				ev.Context.RepairedSHA256 != hex.EncodeToString(sum[:]) {
				return errors.New("a line written since the launch is damaged and not closed off by a matching repair record")
			}
			end += int64(len(damaged)) + 1
			damaged = nil
		}
		switch {
		case ev.Seq != seq+1:
			return fmt.Errorf("an event written since the launch has seq %d, want %d: lines were removed, inserted or moved", ev.Seq, seq+1)
		case ev.Prev != head:
			return fmt.Errorf("the event of seq %d does not chain to the one before it: a line was edited, inserted or moved", ev.Seq)
		}
		h.Write(line)
		h.Write([]byte{'\n'})
		seq, head, end = ev.Seq, ev.Hash, end+int64(len(line))+1
		copy(w.sum[:], h.Sum(nil))
		w.seq, w.hash, w.end = seq, head, end
	}
	return nil
}

// readLine returns the next complete line without its newline, io.EOF at
// the end (a final line without a newline is not returned), and an error
// for a line over audit.MaxLineBytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > audit.MaxLineBytes+1 {
			return nil, audit.ErrLineTooLong
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}
