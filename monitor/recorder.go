package monitor

import (
	"github.com/airlock-sandbox/airlock/audit"
)

// Recorder appends events to an audit log with a Monitor watching: the
// one place where airlock writes its decisions. Alerts are written to the
// log right after the event that raised them, returned, and passed to the
// callback.
type Recorder struct {
	log     *audit.Log
	mon     *Monitor
	onAlert func(audit.Event)
}

// Open opens the audit log at path (see audit.Open) with a Monitor using
// th. onAlert, when not nil, is called with each alert once it is durable
// in the log, outside the log's lock and in the goroutine that called
// Record: the live view of "airlock run".
func Open(path string, th Thresholds, onAlert func(audit.Event), opts ...audit.Option) (*Recorder, error) {
	mon := New(th)
	log, err := audit.Open(path, append(opts, audit.WithHook(mon))...)
	if err != nil {
		return nil, err
	}
	return &Recorder{log: log, mon: mon, onAlert: onAlert}, nil
}

// Record appends ev and returns it as written, with the alerts that it
// (or a record the log added before it) raised. When Record returns nil,
// ev and its alerts are on disk.
func (r *Recorder) Record(ev audit.Event) (audit.Event, []audit.Event, error) {
	return r.alerts(r.log.AppendAll(ev))
}

// RecordLazy is Record for an event no action waits on (a connection's
// end): written at once but synced by the next Record or by Close
// (audit.Log.AppendLazy), as are the alerts it raised.
func (r *Recorder) RecordLazy(ev audit.Event) (audit.Event, []audit.Event, error) {
	return r.alerts(r.log.AppendLazy(ev))
}

// alerts picks the alerts out of the lines one append wrote and passes
// them to the callback.
func (r *Recorder) alerts(written audit.Event, lines []audit.Event, err error) (audit.Event, []audit.Event, error) {
	if err != nil {
		return audit.Event{}, nil, err
	}
	var alerts []audit.Event
	for _, l := range lines {
		if l.Kind == audit.KindBehavioral && l.Decision == audit.DecisionAlert && l.Seq != written.Seq {
			alerts = append(alerts, l)
		}
	}
	if r.onAlert != nil {
		for _, a := range alerts {
			r.onAlert(a)
		}
	}
	return written, alerts, nil
}

// Log returns the audit log the Recorder writes to.
func (r *Recorder) Log() *audit.Log { return r.log }

// Close closes the log.
func (r *Recorder) Close() error { return r.log.Close() }
