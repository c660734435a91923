package monitor

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
)

// The rules, as written in an alert's Context.Alert.
const (
	RuleEgressDenyBurst   = "egress_deny_burst"
	RuleCommandDenyRepeat = "command_deny_repeat"
	RuleResourceKill      = "resource_kill"
	RuleMetadataAccess    = "metadata_access"
	RuleEscapeSuspected   = "escape_suspected"
	RuleStartupRefused    = "startup_refused"
	RuleAuditRepaired     = "audit_repaired"
	RuleEgressBudget      = "egress_budget"
)

// Monitor applies the rules to a stream of events. It is safe for
// concurrent use, and it is an audit.Hook (see the package documentation).
type Monitor struct {
	mu      sync.Mutex
	th      Thresholds
	egress  window
	command window
	// last is when each rule last alerted for each run, and suppressed
	// how many of its alerts were held back since (rate limiting).
	last       map[limitKey]time.Time
	suppressed map[limitKey]int
}

// limitKey is what alerts are rate limited by: a rule, for one run.
type limitKey struct{ rule, run string }

var (
	_ audit.Hook     = (*Monitor)(nil)
	_ audit.Resetter = (*Monitor)(nil)
)

// New returns a Monitor with thresholds th.
func New(th Thresholds) *Monitor {
	return &Monitor{
		th:         th,
		egress:     window{n: th.EgressDenyBurst, width: th.Window},
		command:    window{n: th.CommandDenyRepeat, width: th.Window},
		last:       map[limitKey]time.Time{},
		suppressed: map[limitKey]int{},
	}
}

// interval is the shortest time between two alerts of one rule for one
// run: the window, and at least a second.
func (m *Monitor) interval() time.Duration { return max(m.th.Window, time.Second) }

// Thresholds returns the monitor's thresholds.
func (m *Monitor) Thresholds() Thresholds { return m.th }

// Observe applies the rules to ev, the next event of the stream, and
// returns the alerts it raises, ready to append (kind behavioral,
// decision alert; no seq, ts or hash). An alert event in the stream
// resets its window rule, so that it is not raised twice.
func (m *Monitor) Observe(ev audit.Event) []audit.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &ev.Context
	var alerts []audit.Event
	raise := func(rule, reason string, seqs []uint64, count int) {
		k := limitKey{rule, c.RunID}
		if last, ok := m.last[k]; ok && ev.TS.Sub(last) < m.interval() {
			m.suppressed[k]++
			return
		}
		a := audit.Event{Kind: audit.KindBehavioral, Decision: audit.DecisionAlert, Reason: reason,
			Context: audit.Context{RunID: c.RunID, Tool: c.Tool, Task: c.Task, Alert: rule, TriggerSeqs: seqs}}
		if count > 1 {
			a.Context.Count, a.Context.WindowSeconds = count, m.th.Window.Seconds()
		}
		if n := m.suppressed[k]; n > 0 {
			a.Context.Details = map[string]string{"suppressed": strconv.Itoa(n)}
			a.Reason += fmt.Sprintf(" (%d more %s alerts for this run were held back in the %s before)", n, rule, seconds(m.interval()))
		}
		m.last[k], m.suppressed[k] = ev.TS, 0
		switch rule {
		case RuleMetadataAccess, RuleEgressBudget:
			a.Context.Host, a.Context.Port, a.Context.Addresses = c.Host, c.Port, c.Addresses
		case RuleResourceKill:
			a.Context.KilledBy = c.KilledBy
			a.Context.Command, a.Context.Args, a.Context.ArgvSHA256, a.Context.Tails = c.Command, c.Args, c.ArgvSHA256, c.Tails
		case RuleCommandDenyRepeat:
			a.Context.Command, a.Context.Args, a.Context.ArgvSHA256, a.Context.Tails = c.Command, c.Args, c.ArgvSHA256, c.Tails
		}
		alerts = append(alerts, a)
	}
	switch ev.Kind {
	case audit.KindBehavioral:
		if ev.Decision == audit.DecisionAlert {
			m.recorded(c.Alert)
			k := limitKey{c.Alert, c.RunID}
			if last, ok := m.last[k]; !ok || ev.TS.After(last) {
				m.last[k], m.suppressed[k] = ev.TS, 0
			}
		}
	case audit.KindEgress:
		if ev.Decision != audit.DecisionDeny {
			break
		}
		if c.Event == audit.EventEgressBudgetReached {
			raise(RuleEgressBudget, fmt.Sprintf("an egress budget was reached (%s): "+
				"an exfiltration signature, or a task that needs a larger budget", shown(ev.Reason)), []uint64{ev.Seq}, 1)
		}
		if isMetadata(c, ev.Reason) {
			raise(RuleMetadataAccess, fmt.Sprintf("egress to an always-blocked destination (%s) was attempted: "+
				"a cloud-credential theft signature", shown(destination(c))), []uint64{ev.Seq}, max(c.Count, 1))
		}
		if seqs, n := m.egress.add(ev.TS, ev.Seq, c.Count); seqs != nil {
			raise(RuleEgressDenyBurst, fmt.Sprintf("%d denied egress attempts within %s: "+
				"a command-and-control or exfiltration signature", n, seconds(m.th.Window)), seqs, n)
		}
	case audit.KindCommand:
		if ev.Decision != audit.DecisionDeny {
			break
		}
		if seqs, n := m.command.add(ev.TS, ev.Seq, c.Count); seqs != nil {
			raise(RuleCommandDenyRepeat, fmt.Sprintf("%d denied commands within %s: "+
				"the agent is probing its allowlist", n, seconds(m.th.Window)), seqs, n)
		}
	case audit.KindResource:
		if ev.Decision == audit.DecisionKill {
			raise(RuleResourceKill, killReason(c.KilledBy), []uint64{ev.Seq}, 1)
		}
	case audit.KindLifecycle:
		switch {
		case c.Event == audit.EventEscapeSuspected:
			raise(RuleEscapeSuspected, "escape suspected: halt all tests, snapshot the host, "+
				"keep the sandbox volume, engage incident response (runbook)", []uint64{ev.Seq}, 1)
		case c.Event == audit.EventAuditRepaired:
			raise(RuleAuditRepaired, fmt.Sprintf("the audit log had a damaged line, closed off at seq %d: "+
				"an airlock process stopped mid-write, or the file was edited", ev.Seq), []uint64{ev.Seq}, 1)
		case c.Event == audit.EventStartupRefused, ev.Decision == audit.DecisionDeny:
			raise(RuleStartupRefused, "a sandbox start-up check failed: no test may run in it (runbook)", []uint64{ev.Seq}, 1)
		}
	}
	return alerts
}

// recorded resets the window of a rule whose alert is in the stream.
func (m *Monitor) recorded(rule string) {
	switch rule {
	case RuleEgressDenyBurst:
		m.egress.reset()
	case RuleCommandDenyRepeat:
		m.command.reset()
	}
}

// Reset forgets every event the monitor was shown (audit.Resetter): its
// Log calls it after an append that failed, and then shows it the events
// in the file again.
func (m *Monitor) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.egress.reset()
	m.command.reset()
	clear(m.last)
	clear(m.suppressed)
}

// Wants reports whether a line already in the file may matter to
// Observe (audit.Sifter): denied commands and egress, kills, alerts, and
// the lifecycle events a rule names. For a lifecycle line that is not a
// refusal it looks for the event's field in the line's bytes: they hold
// it, quoted as a writer writes it, when it is one of those, so a line
// without it is not one (one with it by chance is only parsed).
func (m *Monitor) Wants(kind audit.Kind, decision string, line []byte) bool {
	switch kind {
	case audit.KindBehavioral:
		return decision == audit.DecisionAlert
	case audit.KindEgress, audit.KindCommand:
		return decision == audit.DecisionDeny
	case audit.KindResource:
		return decision == audit.DecisionKill
	case audit.KindLifecycle:
		if decision == audit.DecisionDeny {
			return true
		}
		for _, e := range []string{audit.EventEscapeSuspected, audit.EventAuditRepaired, audit.EventStartupRefused} {
			if bytes.Contains(line, []byte(`"event":"`+e+`"`)) {
				return true
			}
		}
		return false
	}
	return true
}

// Lookback is the window: the monitor wants the events of the last
// window that are already in the log (audit.Hook).
func (m *Monitor) Lookback() time.Duration { return m.th.Window }

// Seen observes an event another writer appended (audit.Hook). Its alerts
// are that writer's to raise, and are dropped here.
func (m *Monitor) Seen(ev audit.Event) { m.Observe(ev) }

// Follow observes an event this process writes and returns its alerts, to
// be written right after it (audit.Hook).
func (m *Monitor) Follow(ev audit.Event) []audit.Event { return m.Observe(ev) }

// isMetadata reports whether a denied egress attempt aimed at an
// always-blocked destination: a name or address of the egress gate's
// built-in floor (cloud metadata, link-local), or, for the policy's own
// alwaysBlocked entries, a gate reason saying so.
func isMetadata(c *audit.Context, reason string) bool {
	if c.Host != "" && egress.IsAlwaysBlockedName(c.Host) {
		return true
	}
	for _, s := range c.Addresses {
		if a, err := netip.ParseAddr(s); err == nil && egress.IsAlwaysBlocked(a) {
			return true
		}
	}
	// The egress gate's fixed reasons for an always-blocked entry say
	// `host "H" is always blocked:` (egress/reasons.go).
	return strings.Contains(reason, " is always blocked: ")
}

func destination(c *audit.Context) string {
	if c.Host != "" {
		return c.Host
	}
	if len(c.Addresses) > 0 {
		return c.Addresses[0]
	}
	return "unknown"
}

func killReason(cap string) string {
	if cap == "" {
		return "a run was killed by a resource cap: resource exhaustion (OWASP ASI09)"
	}
	if len(cap) > 16 {
		cap = cap[:16]
	}
	return fmt.Sprintf("a run was killed by its %s cap: resource exhaustion (OWASP ASI09)", cap)
}

// shown quotes at most 64 bytes of s for a reason.
func shown(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q", s)
}
