package enforcer

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
)

// A session stopped by its own alerts (the policy's session.onAlert):
// the monitor writes its alerts in the same append as the record that
// raised them, and the scribe passes every append to alarmed. The first
// alert of the list raised by one of the session's records (its runId)
// stops the session, once, in a goroutine of its own (the caller may be
// the proxy, which the stop must not wait for): the sandbox frozen where
// it stands, its evidence kept, escape_suspected recorded, then the
// session ended as on any escape signal (EndedEscape), which kills the
// step in flight. That step's result, and every later step's, says why
// (Result.EscapeSuspected) and exits ExitEscape; the findings are marked
// untrusted when they are copied out. A session opened on its caller's
// sandbox (SessionOn: a plan's launch) calls its caller's stop instead,
// which follows the same procedure with its own evidence.

// alarmed takes the events of one append of the session's records.
func (s *Session) alarmed(all []audit.Event) {
	if !s.serving.Load() {
		return // a session that failed to open has nothing to stop
	}
	for _, ev := range all {
		if ev.Kind != audit.KindBehavioral || ev.Context.RunID != s.id || !s.e.pol.StopsSession(ev.Context.Alert) {
			continue
		}
		if s.alerted.CompareAndSwap(false, true) {
			s.stop(ev, fmt.Sprintf("alert %s (session.onAlert): %s", ev.Context.Alert, ev.Reason))
		}
		return
	}
}

// stopForAlert is the stop: the suspected-escape procedure (Suspect),
// then the session's end.
func (s *Session) stopForAlert(alert audit.Event, why string) {
	a := Alert{Alert: alert.Context.Alert, Reason: alert.Reason}
	dir, _ := Suspect(s.sb, Suspicion{Name: s.id, Unique: true,
		Record: func(freeze, evidence string) {
			ctx := s.base
			ctx.Event = audit.EventEscapeSuspected
			ctx.Details = maps.Clone(s.base.Details)
			if ctx.Details == nil {
				ctx.Details = map[string]string{}
			}
			ctx.Details["alert"], ctx.Details["freeze"], ctx.Details["evidence"] = a.Alert, freeze, evidence
			_ = s.sc.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionDeny, Context: ctx,
				Reason: "session " + s.id + " stopped by " + why + "; its sandbox frozen and its evidence kept, no further step runs, every artifact of it is untrusted"})
		},
		Collect: func(f *EvidenceFiles) {
			f.JSON("summary.json", alertEvidence{Session: s.id, Time: time.Now().UTC(), Alert: a,
				Freeze: f.Freeze, InitPid: s.sb.Pid(), Sandbox: f.Sandbox, Problems: f.Problems})
		}})
	s.evidence.Store(&dir)
	s.end(EndedEscape)
}

// alertEvidence is summary.json in a stopped session's evidence.
type alertEvidence struct {
	Session  string    `json:"session"`
	Time     time.Time `json:"time"`
	Alert    Alert     `json:"alert"`
	Freeze   string    `json:"freeze"`
	InitPid  int       `json:"initPid"`
	Sandbox  Evidence  `json:"sandbox"`
	Problems []string  `json:"problems,omitempty"`
}

// stoppedBy marks res, the result of a step of a session an alert
// stopped (or is stopping): why, and ExitEscape; once.
func (s *Session) stoppedBy(res *Result) {
	why := s.stopped.Load()
	if why == nil || res.ExitCode == ExitEscape && strings.HasSuffix(res.EscapeSuspected, *why) {
		return
	}
	if res.EscapeSuspected != "" {
		res.EscapeSuspected += "; "
	}
	res.EscapeSuspected += *why
	res.ExitCode = ExitEscape
}

// markUntrusted writes UntrustedMarker into the findings directory of a
// session that ended on an escape signal.
func (s *Session) markUntrusted(why string) error {
	dir := s.findings.Load()
	if dir == nil || *dir == "" {
		return nil
	}
	evidence := ""
	if ev := s.evidence.Load(); ev != nil {
		evidence = *ev
	}
	return MarkUntrusted(*dir, "session that ended on an escape signal", why, evidence)
}
