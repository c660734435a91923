package authoring

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/airlock-sandbox/airlock/audit"
)

// MaxRecords bounds the refusals one suggestion reads: past it, select
// fewer (a run, a session, a time).
const MaxRecords = 100_000

// ReadLog reads the audit log r, verifying its chain as it goes, and
// returns the records f selects that Suggest looks at: refusals,
// escalations, kills and budgets reached. A line that does not verify
// ends the reading with its error: a suggestion comes only from records
// the chain vouches for.
func ReadLog(r io.Reader, f audit.Filter) ([]audit.Event, error) {
	v := audit.NewVerifier("")
	br := bufio.NewReaderSize(r, 64<<10)
	var out []audit.Event
	for {
		line, err := readLine(br, audit.MaxLineBytes)
		switch {
		case errors.Is(err, io.EOF):
			if _, err := v.End(line); err != nil {
				return nil, err
			}
			return out, nil
		case errors.Is(err, errLineTooLong):
			return nil, v.TooLong()
		case err != nil:
			return nil, fmt.Errorf("audit: read: %w", err)
		}
		ev, ok, err := v.Line(line)
		if err != nil {
			return nil, err
		}
		if !ok || !f.Match(ev) || !refusal(ev) {
			continue
		}
		if len(out) == MaxRecords {
			return nil, fmt.Errorf("audit: more than %d refusals selected: select fewer (--run, --session, --since)", MaxRecords)
		}
		out = append(out, ev)
	}
}

// refusal reports whether ev is a record Suggest reads.
func refusal(ev audit.Event) bool {
	switch ev.Decision {
	case audit.DecisionDeny:
		return ev.Kind == audit.KindCommand || ev.Kind == audit.KindEgress
	case audit.DecisionEscalate:
		return ev.Kind == audit.KindCommand
	case audit.DecisionKill:
		return ev.Kind == audit.KindResource
	}
	return false
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline; at the end of r,
// io.EOF with what follows the last newline.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case len(line) > max+1:
			return nil, errLineTooLong
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		}
		return line, err
	}
}
