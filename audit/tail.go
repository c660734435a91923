package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
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

// seedMaxBytes bounds how much of a file a hook's lookback reads: about
// 600 events, far more than any alert threshold needs, so that opening a
// busy log costs a few milliseconds at most, not a read of the whole file.
const seedMaxBytes = 256 << 10

// recentEvents returns the intact events in the file, before size, whose
// time is after since, in file order. It reads backwards and stops at the
// first older event or after seedMaxBytes. A final line without its newline
// is not an event yet and is skipped.
func recentEvents(f *os.File, size int64, since time.Time, sift Sifter) ([]Event, error) {
	var evs []Event
	var data []byte // the file from off, up to the lines already split off
	off := size
	trimmed := false // whether a final partial line was cut from data
	for {
		if !trimmed {
			if j := bytes.LastIndexByte(data, '\n'); j >= 0 {
				data, trimmed = data[:j+1], true
			}
		}
		// Split whole lines off the end of data, which ends in '\n'.
		for trimmed && len(data) > 0 {
			content := data[:len(data)-1]
			i := bytes.LastIndexByte(content, '\n')
			if i < 0 && off > 0 {
				break // the line starts before off: read more first
			}
			line := content[i+1:]
			data = data[:i+1]
			if ts, skip := sifted(line, sift); skip {
				if !ts.After(since) {
					slices.Reverse(evs)
					return evs, nil
				}
				continue
			}
			if ev, err := ParseLine(line); err == nil {
				if !ev.TS.After(since) {
					slices.Reverse(evs)
					return evs, nil
				}
				evs = append(evs, ev)
			}
		}
		if off == 0 || size-off >= seedMaxBytes {
			break
		}
		next := max(0, off-64<<10)
		chunk := make([]byte, off-next, int(off-next)+len(data))
		if _, err := f.ReadAt(chunk, next); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("audit: read the log: %w", err)
		}
		data, off = append(chunk, data...), next
	}
	slices.Reverse(evs)
	return evs, nil
}

// sifted reports whether sift does not want line, told from its head
// alone, and the line's time then; a line whose head does not read, or
// no sift, is not skipped.
func sifted(line []byte, sift Sifter) (time.Time, bool) {
	if sift == nil {
		return time.Time{}, false
	}
	ts, kind, decision, ok := lineHead(line)
	return ts, ok && !sift.Wants(kind, decision, line)
}

// lineHead reads the head of a line as writers write it,
// {"seq":N,"ts":"…","kind":"…","decision":"…", and nothing of the rest;
// ok is false for any other start.
func lineHead(line []byte) (ts time.Time, kind Kind, decision string, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !found {
		return
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 {
		return
	}
	field := func(name string) (string, bool) {
		r, found := bytes.CutPrefix(rest, []byte(`,"`+name+`":"`))
		if !found {
			return "", false
		}
		v, after, found := bytes.Cut(r, []byte{'"'})
		if !found || bytes.IndexByte(v, '\\') >= 0 {
			return "", false
		}
		rest = after
		return string(v), true
	}
	rest = rest[i:]
	t, ok1 := field("ts")
	k, ok2 := field("kind")
	d, ok3 := field("decision")
	if !ok1 || !ok2 || !ok3 || !Kind(k).Valid() || !validDecision(d) {
		return time.Time{}, "", "", false
	}
	ts, err := time.Parse(time.RFC3339Nano, t)
	if err != nil {
		return time.Time{}, "", "", false
	}
	return ts, Kind(k), d, true
}
