package enforcer

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/linelog"
)

// scribe writes the events of one run or session to the audit stream and
// passes what each append wrote to the tally of the command in progress,
// if any: the egress decisions and alerts its result reports. It keeps
// the first record the audit log refused, the command's (in its tally)
// and the session's: a record that cannot be written is never silent
// (docs/audit.md, "Durability and failures").
type scribe struct {
	e       *Enforcer
	cur     atomic.Pointer[tally]
	alarm   func([]audit.Event) // a session's, given every append's events (alertstop.go); nil for a run
	refused func(error)         // called with every record refused, when not nil

	mu     sync.Mutex
	failed error // the first record refused outside any command's tally
}

// record appends ev durably (audit.Log.AppendAll).
func (s *scribe) record(ev audit.Event) error {
	_, all, err := s.e.log.AppendAll(ev)
	return s.emit(ev, all, err)
}

// recordLazy is record for an event no action waits on: written now,
// synced by the next record (audit.Log.AppendLazy).
func (s *scribe) recordLazy(ev audit.Event) error {
	_, all, err := s.e.log.AppendLazy(ev)
	return s.emit(ev, all, err)
}

// emit passes the lines one append wrote to the tally and to OnEvent, or
// keeps the failure to write ev.
func (s *scribe) emit(ev audit.Event, all []audit.Event, err error) error {
	if err != nil {
		failed := audit.NotWritten(ev, err)
		s.note(failed)
		if s.refused != nil {
			s.refused(failed)
		}
		return err // the log's error names it ("audit: write …")
	}
	if t := s.cur.Load(); t != nil {
		t.saw(all)
	}
	if s.alarm != nil {
		s.alarm(all)
	}
	if s.e.opts.OnEvent != nil {
		for _, w := range all {
			s.e.opts.OnEvent(w)
		}
	}
	return nil
}

// note keeps failed, a record the log refused, as the command's first
// failure (or the session's, outside a command).
func (s *scribe) note(failed error) {
	if t := s.cur.Load(); t != nil {
		t.mu.Lock()
		if t.failed == nil {
			t.failed = failed
		}
		t.mu.Unlock()
		return
	}
	s.mu.Lock()
	if s.failed == nil {
		s.failed = failed
	}
	s.mu.Unlock()
}

// finish sets the result of a command whose records were not all
// written: AuditError, and ExitAudit when the command ran (the status it
// would have had kept in CommandExitCode). The error wraps ErrAudit.
func (s *scribe) finish(res Result) (Result, error) {
	var failed error
	if t := s.cur.Load(); t != nil {
		t.mu.Lock()
		failed = t.failed
		t.mu.Unlock()
	}
	if failed == nil {
		return res, nil
	}
	res.AuditError = failed.Error()
	if res.ExitCode != ExitSetup && res.Refusal == nil {
		code := res.ExitCode
		res.CommandExitCode, res.ExitCode = &code, ExitAudit
	}
	return res, fmt.Errorf("enforcer: %w: %w", ErrAudit, failed)
}

// sessionFailed is the first record the log refused outside any command.
func (s *scribe) sessionFailed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// tally is what one command's result reports beside its exit: the egress
// decisions made, the allowed requests that then failed, and the alerts
// raised while it was decided and ran, and the first of its records the
// audit log refused. It writes each egress refusal and each failure, as
// it happens, as one line to notices.
type tally struct {
	mu       sync.Mutex
	egress   []EgressDecision
	failures []EgressDecision
	omitted  int
	alerts   []Alert
	notices  *linelog.Writer // nil: no notices
	failed   error
}

// newTally is the tally of one command, whose notices go to w (nil:
// none) through a queue that never blocks the proxy or the audit append
// it is written from: a stderr nobody reads drops lines, and counts them.
// End must be called when the command is done.
func newTally(w io.Writer) *tally {
	t := &tally{egress: []EgressDecision{}, failures: []EgressDecision{}, alerts: []Alert{}}
	if w != nil {
		t.notices = linelog.New(w)
	}
	return t
}

// end writes out the notices still queued, waiting at most a second.
func (t *tally) end() {
	if t.notices != nil {
		t.notices.Close(time.Second)
	}
}

// saw takes the events of one append.
func (t *tally) saw(all []audit.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ev := range all {
		switch {
		case ev.Kind == audit.KindEgress && (ev.Decision == audit.DecisionAllow || ev.Decision == audit.DecisionDeny):
			if ev.Decision == audit.DecisionDeny && t.notices != nil {
				t.notices.Printf("airlock: egress: deny: %s", ev.Reason)
			}
			if len(t.egress) == MaxEgressEntries {
				t.omitted++
				continue
			}
			c := ev.Context
			t.egress = append(t.egress, EgressDecision{Host: c.Host, Port: c.Port, Protocol: c.Protocol,
				Decision: ev.Decision, Reason: ev.Reason, Rule: c.Rule})
		case ev.Kind == audit.KindEgress && ev.Context.Event == audit.EventEgressFailed:
			c := ev.Context
			if t.notices != nil {
				t.notices.Printf("airlock: egress: allowed, then failed: %s: %s", net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.Details["error"])
			}
			if len(t.failures) == MaxEgressEntries {
				t.omitted++
				continue
			}
			t.failures = append(t.failures, EgressDecision{Host: c.Host, Port: c.Port, Protocol: c.Protocol,
				Decision: audit.DecisionAllow, Reason: ev.Reason, Rule: c.Rule})
		case ev.Kind == audit.KindBehavioral && len(t.alerts) < MaxAlertEntries:
			t.alerts = append(t.alerts, Alert{Alert: ev.Context.Alert, Reason: ev.Reason})
		}
	}
}

// into copies the tally into res.
func (t *tally) into(res *Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	res.Egress = append([]EgressDecision{}, t.egress...)
	res.EgressFailed = append([]EgressDecision{}, t.failures...)
	res.EgressOmitted = t.omitted
	res.Alerts = append([]Alert{}, t.alerts...)
}
