package audit

import (
	"errors"
	"fmt"
	"io"
	"iter"
)

// Events reads the log r and yields its intact events in file order,
// without checking the chain: for tools that want what a damaged or
// tampered log still says (the monitor's replay). A line that is not an
// intact event yields a *Error naming it, and reading goes on; a line over
// MaxLineBytes (ErrLineTooLong) or a failing reader yields another error
// and ends the sequence.
// A final line without its newline is reported as damaged.
func Events(r io.Reader) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		lr := newLineReader(r, MaxLineBytes)
		for n := 1; ; n++ {
			line, err := lr.next()
			switch {
			case errors.Is(err, io.EOF):
				if len(line) > 0 {
					yield(Event{}, &Error{Line: n, Reason: "the final line has no newline"})
				}
				return
			case errors.Is(err, ErrLineTooLong):
				yield(Event{}, fmt.Errorf("audit: line %d: %w", n, ErrLineTooLong))
				return
			case err != nil:
				yield(Event{}, fmt.Errorf("audit: read: %w", err))
				return
			}
			ev, perr := ParseLine(line)
			if perr != nil {
				if !yield(Event{}, &Error{Line: n, Reason: perr.Error()}) {
					return
				}
				continue
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}
