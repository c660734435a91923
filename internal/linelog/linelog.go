// Package linelog writes log lines to a terminal or a pipe without ever
// blocking the caller: lines wait in a bounded queue that one goroutine
// writes out; when the queue is full a line is dropped and counted, and
// the count is written as soon as the writer has caught up (and at
// Close). It is for lines printed on a data path (the proxy's decisions,
// monitor alerts), where a reader that stops reading must not stop the
// path; the audit stream, not the log, is the durable record.
//
// Every line is made safe for a terminal on the way: control characters
// other than tab, and bytes that are not UTF-8, are written as \xNN, and
// other characters that do not print (C1 controls, bidirectional
// overrides) as \uNNNN, so a line that carries a string a sandbox chose
// cannot move the cursor, set the title, reorder or hide itself.
//
// Hand-written: a queue of lines and a goroutine; the logging packages
// either block on a full writer (log, log/slog) or drop without saying.
package linelog

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// Bounds of the queue: lines beyond either are dropped. (The goroutine
// may hold one more such batch, the one it is writing.)
const (
	MaxLines = 1024
	MaxBytes = 256 << 10
)

// Writer is a non-blocking line writer. Its methods are safe for
// concurrent use.
type Writer struct {
	w    io.Writer
	wake chan struct{} // a line is queued, or Close was called
	done chan struct{} // the writing goroutine has ended

	mu      sync.Mutex
	queue   [][]byte
	bytes   int
	dropped int
	closed  bool
}

// New starts a Writer over w.
func New(w io.Writer) *Writer {
	l := &Writer{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go l.run()
	return l
}

// Printf queues one line, formatted as fmt.Sprintf does; a final newline
// is added when missing.
func (l *Writer) Printf(format string, args ...any) {
	_, _ = l.Write([]byte(fmt.Sprintf(format, args...)))
}

// Write queues b as one line (its newlines other than a final one are
// escaped), or drops it when the queue is full. It never blocks on the
// underlying writer and never fails.
func (l *Writer) Write(b []byte) (int, error) {
	line := Escape(b)
	l.mu.Lock()
	if l.closed || len(l.queue) >= MaxLines || l.bytes+len(line) > MaxBytes {
		l.dropped++
		l.mu.Unlock()
		return len(b), nil
	}
	l.queue = append(l.queue, line)
	l.bytes += len(line)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return len(b), nil
}

// Dropped returns how many lines have been dropped so far.
func (l *Writer) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// run writes the queued lines, and the count of dropped lines once the
// queue is empty, until Close.
func (l *Writer) run() {
	defer close(l.done)
	reported := 0
	for {
		l.mu.Lock()
		batch := l.queue
		l.queue, l.bytes = nil, 0
		dropped, closed := l.dropped, l.closed
		l.mu.Unlock()
		for _, line := range batch {
			_, _ = l.w.Write(line)
		}
		if dropped > reported && len(batch) == 0 {
			fmt.Fprintf(l.w, "airlock: %d log lines dropped: stderr was not read fast enough (the audit log holds every decision)\n", dropped-reported)
			reported = dropped
		}
		if len(batch) > 0 {
			continue // drain first, then report
		}
		if closed {
			return
		}
		<-l.wake
	}
}

// Close writes what is queued and the count of dropped lines, waiting at
// most timeout for the underlying writer; lines written after Close are
// dropped.
func (l *Writer) Close(timeout time.Duration) {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	select {
	case <-l.done:
	case <-time.After(timeout):
	}
}

// Escape returns b as one line that is safe to write to a terminal
// (termtext.Escape: control characters, new lines and tabs included,
// bytes that are not UTF-8 and characters that do not print are written
// as escapes); one final newline is kept, or added.
func Escape(b []byte) []byte {
	return append([]byte(termtext.Escape(string(bytes.TrimSuffix(b, []byte("\n"))))), '\n')
}
