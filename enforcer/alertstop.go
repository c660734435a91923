package enforcer

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/sandbox"
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
// untrusted when they are copied out.

// alarmed takes the events of one append of the session's records.
func (s *Session) alarmed(all []audit.Event) {
	if !s.serving.Load() {
		return // a session that failed to open has nothing to stop
	}
	for _, ev := range all {
		if ev.Kind != audit.KindBehavioral || ev.Context.RunID != s.id || !s.e.pol.StopsSession(ev.Context.Alert) {
			continue
		}
		s.stopOnce.Do(func() {
			why := fmt.Sprintf("alert %s (session.onAlert): %s", ev.Context.Alert, ev.Reason)
			s.stopped.Store(&why)
			go s.stopForAlert(ev, why)
		})
		return
	}
}

// stopForAlert is the stop: freeze, evidence, escape_suspected, end.
func (s *Session) stopForAlert(alert audit.Event, why string) {
	freeze, err := s.sb.ss.Freeze()
	if err != nil {
		freeze = "not frozen: " + err.Error()
	}
	dir, err := s.keepEvidence(alert, freeze)
	evidence := dir
	if err != nil {
		evidence = "none: " + err.Error()
	}
	s.evidence.Store(&dir)
	ctx := s.base
	ctx.Event = audit.EventEscapeSuspected
	ctx.Details = maps.Clone(s.base.Details)
	if ctx.Details == nil {
		ctx.Details = map[string]string{}
	}
	ctx.Details["alert"], ctx.Details["freeze"], ctx.Details["evidence"] = alert.Context.Alert, freeze, evidence
	_ = s.sc.record(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionDeny, Context: ctx,
		Reason: "session " + s.id + " stopped by " + why + "; its sandbox frozen and its evidence kept, no further step runs, every artifact of it is untrusted"})
	s.end(EndedEscape)
}

// alertEvidence is summary.json in a stopped session's evidence.
type alertEvidence struct {
	Session  string           `json:"session"`
	Time     time.Time        `json:"time"`
	Alert    Alert            `json:"alert"`
	Freeze   string           `json:"freeze"`
	InitPid  int              `json:"initPid"`
	Sandbox  sandbox.Evidence `json:"sandbox"`
	Problems []string         `json:"problems,omitempty"`
}

// keepEvidence snapshots the frozen sandbox into a new directory of its
// own under DefaultEvidenceDir, named for the session: the
// sandbox's own snapshot in sandbox/ (processes, mounts, network, the
// workspace kept) and summary.json.
func (s *Session) keepEvidence(alert audit.Event, freeze string) (string, error) {
	base, err := DefaultEvidenceDir()
	if err != nil {
		return "", fmt.Errorf("enforcer: %w", err)
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("evidence: %w", err)
	}
	dir, err := os.MkdirTemp(base, s.id+"-")
	if err != nil {
		return "", fmt.Errorf("evidence: %w", err)
	}
	sum := alertEvidence{Session: s.id, Time: time.Now().UTC(), Alert: Alert{Alert: alert.Context.Alert, Reason: alert.Reason},
		Freeze: freeze, InitPid: s.sb.ss.Pid()}
	if sum.Sandbox, err = s.sb.ss.Evidence(filepath.Join(dir, "sandbox")); err != nil {
		sum.Problems = append(sum.Problems, err.Error())
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return dir, fmt.Errorf("evidence: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "summary.json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return dir, fmt.Errorf("evidence: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dir, fmt.Errorf("evidence: %w", err)
	}
	return dir, nil
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
