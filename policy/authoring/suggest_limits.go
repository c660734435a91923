package authoring

import (
	"fmt"
	"math"
	"strings"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/policy"
)

// killedBySession is the killedBy of a step its session's wall clock
// ended (enforcer.KilledBySession).
const killedBySession = "session-wall"

type capKey struct{ tool, killedBy string }

// capField is a cap that kills a run, as the policy names it.
type capField struct {
	field string  // caps' field
	max   float64 // the most the policy allows
	def   float64 // the default
	// current is the cap's value in l for tool.
	current func(l *policy.Loaded, tool string) float64
	// peak is what the record says the run reached, in the cap's unit,
	// and how to say it; ok false when it says nothing.
	peak func(c audit.Context) (v float64, shown string, ok bool)
}

// capFields are the caps by the killedBy that names them (docs/cli.md).
var capFields = map[string]capField{
	"wall": {"wallSeconds", 86400, policy.DefaultCPUSeconds,
		func(l *policy.Loaded, t string) float64 { return l.CapsFor(t).WallSeconds },
		func(c audit.Context) (float64, string, bool) {
			return float64(c.WallMs) / 1000, fmt.Sprintf("%d ms wall clock", c.WallMs), c.WallMs > 0
		}},
	"cpu": {"cpuSeconds", 86400, policy.DefaultCPUSeconds,
		func(l *policy.Loaded, t string) float64 { return l.CapsFor(t).CPUSeconds },
		func(c audit.Context) (float64, string, bool) {
			return float64(c.CPUMs) / 1000, fmt.Sprintf("%d ms of CPU", c.CPUMs), c.CPUMs > 0
		}},
	"memory": {"memoryMb", 1 << 20, policy.DefaultMemoryMB,
		func(l *policy.Loaded, t string) float64 { return float64(l.CapsFor(t).MemoryMB) },
		func(c audit.Context) (float64, string, bool) {
			return float64(c.PeakMemoryBytes) / (1 << 20), fmt.Sprintf("%.1f MiB of memory", float64(c.PeakMemoryBytes)/(1<<20)), c.PeakMemoryBytes > 0
		}},
	"pids":   {"processCount", 1 << 16, policy.DefaultProcessCount, func(l *policy.Loaded, t string) float64 { return float64(l.CapsFor(t).ProcessCount) }, nil},
	"disk":   {"diskWriteMb", 1 << 20, policy.DefaultDiskWriteMB, func(l *policy.Loaded, t string) float64 { return float64(l.CapsFor(t).DiskWriteMB) }, nil},
	"output": {"outputMb", 1 << 20, policy.DefaultOutputMB, func(l *policy.Loaded, t string) float64 { return float64(l.CapsFor(t).OutputMB) }, nil},
	killedBySession: {"wallSeconds", 7 * 86400, policy.DefaultSessionWallSeconds,
		func(l *policy.Loaded, _ string) float64 { return l.SessionCaps().WallSeconds }, nil},
}

// readKill reads a run killed by a cap.
func (s *suggester) readKill(ev audit.Event) {
	c := ev.Context
	subject := fmt.Sprintf("tool %s: killed by the %s cap", quote(c.Tool), quote(c.KilledBy))
	_, known := capFields[c.KilledBy]
	_, scoped := s.pol.ToolScopes[c.Tool]
	switch {
	case !known:
		s.leave(subject, "airlock knows no such cap", recordOf(ev))
	case c.KilledBy == killedBySession:
		s.caps.add(capKey{killedBy: c.KilledBy}, ev)
	case !scoped:
		s.leave(subject, "the policy has no scope for the tool now", recordOf(ev))
	default:
		s.caps.add(capKey{c.Tool, c.KilledBy}, ev)
	}
}

// capSuggestions proposes, for each tool and cap that killed a run, the
// cap doubled (to at most its maximum), with the peak the records give.
func (s *suggester) capSuggestions() []*Suggestion {
	var out []*Suggestion
	for _, k := range s.caps.keys {
		f := capFields[k.killedBy]
		evs := s.caps.m[k]
		var recs Records
		peak, shown, known := 0.0, "", false
		for _, ev := range evs {
			recs = append(recs, recordOf(ev))
			if f.peak != nil {
				if v, sh, ok := f.peak(ev.Context); ok && v >= peak {
					peak, shown, known = v, sh, true
				}
			}
		}
		sortRecords(recs)
		cur := f.current(s.pol, k.tool)
		keys := []string{"toolScopes", k.tool, "caps"}
		field := strict.Field("toolScopes", k.tool) + ".caps." + f.field
		subject := "tool " + quote(k.tool)
		if k.killedBy == killedBySession {
			keys, field, subject = []string{"session"}, "session."+f.field, "the session"
		}
		to := math.Min(cur*2, f.max)
		switch {
		case known && cur > peak*1.1:
			s.leave(subject, fmt.Sprintf("the cap is %v now, above the %s the run reached: it was raised since", cur, shown), recs...)
			continue
		case cur >= f.max:
			s.leave(subject, fmt.Sprintf("the cap is at its maximum, %v", f.max), recs...)
			continue
		}
		if !strings.HasSuffix(f.field, "Seconds") {
			to = math.Floor(to)
		}
		c := &Suggestion{Kind: "cap", Field: field, From: &cur, To: &to, Peak: shown, Records: recs,
			Summary: fmt.Sprintf("%s: raise %s from %v to %v (the runs killed by it reached %s)", subject, f.field, cur, to, orUnknown(shown))}
		if to > f.def {
			c.Risks = append(c.Risks, fmt.Sprintf("a cap raised past its default (%v): %s", f.def, f.field))
		}
		c.apply = func(d *document, _ *policy.Loaded) error { return setNumber(d, keys, f.field, to, c) }
		out = append(out, c)
	}
	return out
}

func orUnknown(shown string) string {
	if shown == "" {
		return "what the record does not say"
	}
	return shown
}

// setNumber sets field of the object at keys to v, with c's comment in
// YAML.
func setNumber(d *document, keys []string, field string, v float64, c *Suggestion) error {
	m, err := d.path(keys...)
	if err != nil {
		return err
	}
	n, err := valueNode(v)
	if err != nil {
		return err
	}
	k := set(m, field, n)
	k.HeadComment = strings.TrimPrefix(k.HeadComment+"\n"+comment(c), "\n")
	return nil
}

type budgetKey struct{ name, host, cap string }

// budgetSuggestions proposes, for each budget cap reached, the cap
// doubled.
func (s *suggester) budgetSuggestions() []*Suggestion {
	var out []*Suggestion
	for _, k := range s.budgets.keys {
		var recs Records
		for _, ev := range s.budgets.m[k] {
			recs = append(recs, recordOf(ev))
		}
		sortRecords(recs)
		subject := fmt.Sprintf("budget %s: %s", quote(k.name), quote(k.cap))
		if k.host != "" {
			subject += " for " + quote(k.host)
		}
		keys, b := s.budget(k.name)
		if b == nil {
			s.leave(subject, "the policy has no such budget now", recs...)
			continue
		}
		limits := b.Limits()
		if k.host != "" {
			limits, keys = b.Hosts[k.host], append(keys, "hosts", k.host)
		}
		cur := capOf(limits, k.cap)
		switch {
		case cur == nil:
			s.leave(subject, "the budget has no such cap now", recs...)
			continue
		case *cur > math.MaxInt64/2:
			s.leave(subject, "the cap cannot be doubled", recs...)
			continue
		}
		from, to := float64(*cur), float64(*cur*2)
		field := ""
		for _, key := range append(keys, k.cap) {
			field = strict.Field(field, key)
		}
		c := &Suggestion{Kind: "budget", Field: field, From: &from, To: &to, Records: recs,
			Peak:    fmt.Sprintf("reached its cap of %d", *cur),
			Summary: fmt.Sprintf("%s: raise from %d to %d (reached)", subject, *cur, *cur*2),
			Risks:   []string{"a budget raised: the task may move more through the proxy (the records show it reached the cap, not how much more it wanted)"}}
		capName := k.cap
		c.apply = func(d *document, _ *policy.Loaded) error { return setNumber(d, keys, capName, to, c) }
		out = append(out, c)
	}
	return out
}

// budget finds the policy's budget that the proxy's record names name ("task T",
// "session"), and where it is.
func (s *suggester) budget(name string) ([]string, *policy.Budget) {
	if name == "session" && s.pol.Session != nil && s.pol.Session.Egress != nil {
		return []string{"session", "egress"}, s.pol.Session.Egress
	}
	if task, ok := strings.CutPrefix(name, "task "); ok && s.pol.Egress != nil {
		if b, ok := s.pol.Egress.Budgets[task]; ok {
			return []string{"egress", "budgets", task}, &b
		}
	}
	return nil, nil
}

func capOf(l policy.BudgetLimits, name string) *int64 {
	switch name {
	case "bytesOut":
		return l.BytesOut
	case "bytesIn":
		return l.BytesIn
	case "requests":
		return l.Requests
	case "connections":
		return l.Connections
	case "concurrentConnections":
		return l.ConcurrentConnections
	}
	return nil
}
