package main

import (
	"fmt"
	"io"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// progress shows how far a long command has got on one line of a
// terminal, rewritten in place (carriage return, erase to the end of the
// line); off a terminal there is none (the report that follows says it
// all), so that logs and pipes get no control bytes.
type progress struct {
	w io.Writer
}

// newProgress is a progress line on w when w is a terminal, else nil
// (whose methods do nothing).
func newProgress(w io.Writer) *progress {
	if isTerminal(w) {
		return &progress{w: termtext.Raw(w)}
	}
	return nil
}

// show replaces the line with text, escaped and clipped to 100 runes.
func (p *progress) show(text string) {
	if p != nil {
		fmt.Fprintf(p.w, "\r\x1b[K%s", termtext.Clip(text, 100))
	}
}

// done clears the line.
func (p *progress) done() {
	if p != nil {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
