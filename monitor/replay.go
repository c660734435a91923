package monitor

import (
	"errors"
	"fmt"
	"io"

	"github.com/airlock-sandbox/airlock/audit"
)

// Result is what Replay found in a log.
type Result struct {
	// Recorded are the alerts written in the log.
	Recorded []audit.Event `json:"recorded"`
	// Recomputed are the alerts the rules raise on the log's events, as
	// if it were written now: Seq is 0, TS is the triggering event's.
	Recomputed []audit.Event `json:"recomputed"`
	// Missing are the recomputed alerts that no recorded alert matches
	// (same rule, same last triggering seq): alerts a writer without a
	// monitor, or with other thresholds, did not raise.
	Missing []audit.Event `json:"missing"`
	// Events counts the intact events read; Damaged the lines skipped.
	Events  int `json:"events"`
	Damaged int `json:"damaged"`
}

// Replay reads the log r and recomputes its alerts with thresholds th.
// It reads what a damaged or tampered log still says, skipping bad lines
// (counted in Damaged); verify the log with audit.Verify to trust it.
func Replay(r io.Reader, th Thresholds) (Result, error) {
	res := Result{Recorded: []audit.Event{}, Recomputed: []audit.Event{}, Missing: []audit.Event{}}
	m := New(th)
	for ev, err := range audit.Events(r) {
		if err != nil {
			var e *audit.Error
			if !errors.As(err, &e) {
				return res, fmt.Errorf("monitor: replay: %w", err)
			}
			res.Damaged++
			continue
		}
		res.Events++
		if ev.Kind == audit.KindBehavioral && ev.Decision == audit.DecisionAlert {
			res.Recorded = append(res.Recorded, ev)
		}
		for _, a := range m.Observe(ev) {
			a.TS = ev.TS
			res.Recomputed = append(res.Recomputed, a)
		}
	}
	type key struct {
		rule string
		seq  uint64
	}
	recorded := map[key]bool{}
	for _, a := range res.Recorded {
		if n := len(a.Context.TriggerSeqs); n > 0 {
			recorded[key{a.Context.Alert, a.Context.TriggerSeqs[n-1]}] = true
		}
	}
	for _, a := range res.Recomputed {
		if !recorded[key{a.Context.Alert, a.Context.TriggerSeqs[len(a.Context.TriggerSeqs)-1]}] {
			res.Missing = append(res.Missing, a)
		}
	}
	return res, nil
}
