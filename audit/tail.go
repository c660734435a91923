package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

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
