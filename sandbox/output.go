package sandbox

import (
	"fmt"
	"io"
	"sync/atomic"
)

// outputCap counts what a run (or a session's step) writes to stdout and
// stderr together, as airlock forwards it: the output cap
// (limits.Caps.OutputBytes, docs/sandbox.md "Caps"). Up to the cap every
// byte is passed on; the write that passes it is cut at the cap, the
// stream it was on gets a line saying so, and trip is called once (it
// kills the run). From then on nothing is passed on.
//
// A write through the cap never fails and never waits for the cap: the
// copies go on draining the pipes until every writer is dead, so that no
// process inside blocks on a full pipe, and airlock's memory does not grow
// with the output at any rate (the copies use fixed buffers, and past the
// cap nothing reaches the caller's writers). A caller's writer that fails
// is dropped the same way: the rest of its output is discarded.
type outputCap struct {
	limit int64
	left  atomic.Int64
	trip  func()
}

// outputCutLine is written to the stream that passed the cap.
const outputCutLine = "\nairlock: output cut: stdout and stderr passed the output cap of %d bytes together; the run was killed\n"

func newOutputCap(limit int64, trip func()) *outputCap {
	c := &outputCap{limit: limit, trip: trip}
	c.left.Store(limit)
	return c
}

// writers returns stdout and stderr behind the cap; when the two are the
// same writer, so are the two returned (one pipe, as os/exec makes for
// equal writers, and no interleaved writes to it).
func (c *outputCap) writers(stdout, stderr io.Writer) (io.Writer, io.Writer) {
	out := &cappedWriter{w: stdout, c: c}
	if interfaceEqual(stdout, stderr) {
		return out, out
	}
	return out, &cappedWriter{w: stderr, c: c}
}

// cappedWriter is one stream behind an outputCap, written by one
// goroutine (os/exec's copy, or a step's).
type cappedWriter struct {
	c      *outputCap
	w      io.Writer
	failed bool
}

// Write passes p on up to the cap and always reports all of p written.
func (cw *cappedWriter) Write(p []byte) (int, error) {
	n := int64(len(p))
	left := cw.c.left.Add(-n)
	switch {
	case left >= 0:
		cw.forward(p)
	case left+n >= 0:
		// The one write that passes the cap: what fits, then the note.
		cw.forward(p[:left+n])
		cw.forward(fmt.Appendf(nil, outputCutLine, cw.c.limit))
		cw.c.trip()
	}
	return len(p), nil
}

func (cw *cappedWriter) forward(p []byte) {
	if cw.failed || len(p) == 0 {
		return
	}
	if _, err := cw.w.Write(p); err != nil {
		cw.failed = true
	}
}

// interfaceEqual reports whether a and b are the same comparable value.
func interfaceEqual(a, b any) bool {
	defer func() { recover() }() // uncomparable dynamic types
	return a == b
}
