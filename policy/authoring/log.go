package authoring

import (
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
	var out []audit.Event
	_, err := audit.NewVerifier("").ReadAll(r, func(ev audit.Event) error {
		if !f.Match(ev) || !refusal(ev) {
			return nil
		}
		if len(out) == MaxRecords {
			return fmt.Errorf("audit: more than %d refusals selected: select fewer (--run, --session, --since)", MaxRecords)
		}
		out = append(out, ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
