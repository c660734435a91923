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

// The hook's catch-up (hook.go): before each append, a Log shows its
// hook the events other writers appended since its last, or, the first
// time, those of the hook's lookback, read from the end of the file.

// catchUp shows the hook the events that other writers appended since
// this Log last wrote, or, the first time, those within its lookback.
func (l *Log) catchUp(size int64, now time.Time) error {
	if l.hook == nil {
		return nil
	}
	sift, _ := l.hook.(Sifter)
	if l.seen < 0 || size < l.seen || size-l.seen > seedMaxBytes {
		evs, err := recentEvents(l.f, size, now.Add(-l.hook.Lookback()), sift)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			l.hook.Seen(ev)
		}
		l.seen = size
		return nil
	}
	if size == l.seen {
		return nil
	}
	buf := make([]byte, size-l.seen)
	if _, err := l.f.ReadAt(buf, l.seen); err != nil {
		return fmt.Errorf("audit: read %s: %w", l.path, err)
	}
	for len(buf) > 0 {
		line, rest, _ := bytes.Cut(buf, []byte{'\n'})
		buf = rest
		if _, skip := sifted(line, sift); skip {
			continue
		}
		if ev, err := ParseLine(line); err == nil {
			l.hook.Seen(ev)
		}
	}
	l.seen = size
	return nil
}

// resetHook is called after a failed append: a hook that saw the
// batch's events, which are not in the file, is reset (Resetter) and
// shown the file's recent events again on the next append.
func (l *Log) resetHook() {
	if r, ok := l.hook.(Resetter); ok {
		r.Reset()
		l.seen = -1
	}
}

// seedMaxBytes bounds how much of a file a hook's lookback reads: about
// 600 events, far more than any alert threshold needs, so that opening a
// busy log costs a few milliseconds at most, not a read of the whole file.
const seedMaxBytes = 256 << 10

// recentEvents returns the intact events in the file, before size, whose
// time is after since, in file order. It reads the last seedMaxBytes at
// most, and goes back through their whole lines to the first older event.
// A final line without its newline is not an event yet and is skipped.
func recentEvents(f *os.File, size int64, since time.Time, sift Sifter) ([]Event, error) {
	off := max(0, size-seedMaxBytes)
	data := make([]byte, size-off)
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("audit: read the log: %w", err)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	if off > 0 { // the first line may start before off
		data = data[bytes.IndexByte(data, '\n')+1:]
	}
	var evs []Event
	for len(data) > 0 {
		i := bytes.LastIndexByte(data[:len(data)-1], '\n')
		line := data[i+1 : len(data)-1]
		data = data[:i+1]
		ts, skip := sifted(line, sift)
		var ev Event
		if !skip {
			var err error
			if ev, err = ParseLine(line); err != nil {
				continue
			}
			ts = ev.TS
		}
		if !ts.After(since) {
			break
		}
		if !skip {
			evs = append(evs, ev)
		}
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
