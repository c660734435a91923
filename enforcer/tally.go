package enforcer

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/audit"
)

// scribe writes the events of one run or session to the audit stream and
// passes what each append wrote to the tally of the command in progress,
// if any: the egress decisions and alerts its result reports.
type scribe struct {
	e   *Enforcer
	cur atomic.Pointer[tally]
}

// record appends ev durably (audit.Log.AppendAll).
func (s *scribe) record(ev audit.Event) error { return s.emit(s.e.log.AppendAll(ev)) }

// recordLazy is record for an event no action waits on: written now,
// synced by the next record (audit.Log.AppendLazy).
func (s *scribe) recordLazy(ev audit.Event) error { return s.emit(s.e.log.AppendLazy(ev)) }

// emit passes the lines one append wrote to the tally and to OnEvent.
func (s *scribe) emit(_ audit.Event, all []audit.Event, err error) error {
	if err != nil {
		return fmt.Errorf("enforcer: audit: %w", err)
	}
	if t := s.cur.Load(); t != nil {
		t.saw(all)
	}
	if s.e.opts.OnEvent != nil {
		for _, w := range all {
			s.e.opts.OnEvent(w)
		}
	}
	return nil
}

// tally is what one command's result reports beside its exit: the egress
// decisions made and the alerts raised while it was decided and ran. It
// writes each egress refusal, as it happens, as one line to notices.
type tally struct {
	mu      sync.Mutex
	egress  []EgressDecision
	omitted int
	alerts  []Alert
	notices io.Writer
}

func newTally(notices io.Writer) *tally {
	return &tally{egress: []EgressDecision{}, alerts: []Alert{}, notices: notices}
}

// saw takes the events of one append.
func (t *tally) saw(all []audit.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ev := range all {
		switch {
		case ev.Kind == audit.KindEgress && (ev.Decision == audit.DecisionAllow || ev.Decision == audit.DecisionDeny):
			if ev.Decision == audit.DecisionDeny && t.notices != nil {
				io.WriteString(t.notices, "airlock: egress: deny: "+escapeLine(ev.Reason)+"\n")
			}
			if len(t.egress) == MaxEgressEntries {
				t.omitted++
				continue
			}
			c := ev.Context
			t.egress = append(t.egress, EgressDecision{Host: c.Host, Port: c.Port, Protocol: c.Protocol,
				Decision: ev.Decision, Reason: ev.Reason, Rule: c.Rule})
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
	res.EgressOmitted = t.omitted
	res.Alerts = append([]Alert{}, t.alerts...)
}

// escapeLine makes s safe to print as one line on a terminal: control
// characters, line and paragraph separators, other non-printing runes
// and invalid UTF-8 are written as Go escapes, so a host name or reason
// chosen by the sandboxed code cannot move the cursor, clear the screen
// or fake another line.
func escapeLine(s string) string {
	if isPlainLine(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// isPlainLine reports whether s has only printable ASCII: the common
// case, returned as is.
func isPlainLine(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
