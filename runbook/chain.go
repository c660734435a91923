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
type chainWatch struct {
	path   string
	fi     os.FileInfo // the file at launch: a replaced file is a break
	offset int64       // where the launch line starts
	line   []byte      // the launch line, without its newline
	seq    uint64
	hash   string
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
	end += len(needle) - 1 // the newline
	start := bytes.LastIndexByte(buf[:end], '\n') + 1
	return &chainWatch{path: path, fi: fi, offset: from + int64(start), line: bytes.Clone(buf[start:end]),
		seq: launched.Seq, hash: launched.Hash}, nil
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
	if fi.Size() < w.offset+int64(len(w.line))+1 {
		return errors.New("the audit log was cut before the end of the launch event")
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, w.offset, fi.Size()-w.offset), 64<<10)
	first, err := readLine(r)
	if err != nil || !bytes.Equal(first, w.line) {
		return errors.New("the launch event's line was changed or moved")
	}
	seq, head := w.seq, w.hash
	var damaged []byte
	for n := 1; ; n++ {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			if damaged != nil {
				return fmt.Errorf("line %d after the launch is damaged and no repair record follows it", n-1)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d after the launch: %w", n, err)
		}
		ev, perr := audit.ParseLine(line)
		if perr != nil {
			if damaged != nil {
				return fmt.Errorf("line %d after the launch: %v", n-1, perr)
			}
			damaged = bytes.Clone(line)
			continue
		}
		if damaged != nil {
			sum := sha256.Sum256(damaged)
			if ev.Context.Event != audit.EventAuditRepaired || ev.Context.RepairedBytes != int64(len(damaged)) ||
				ev.Context.RepairedSHA256 != hex.EncodeToString(sum[:]) {
				return fmt.Errorf("line %d after the launch is damaged and not closed off by a matching repair record", n-1)
			}
			damaged = nil
		}
		switch {
		case ev.Seq != seq+1:
			return fmt.Errorf("line %d after the launch has seq %d, want %d: lines were removed, inserted or moved", n, ev.Seq, seq+1)
		case ev.Prev != head:
			return fmt.Errorf("line %d after the launch does not chain to the line before it: a line was edited, inserted or moved", n)
		}
		seq, head = ev.Seq, ev.Hash
	}
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
