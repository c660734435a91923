package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/internal/strict"
)

// The defaults of the session section: what one session may hold and how
// long it may live when the policy does not say.
const (
	DefaultSessionMemoryMB     = 1024
	DefaultSessionProcessCount = 64
	DefaultSessionDiskWriteMB  = 256
	DefaultSessionWallSeconds  = 3600
	DefaultSessionIdleSeconds  = 600
)

// NoTask is the egress task of a session started without one: no policy
// may name a task so, so it allows no destination.
const NoTask = "(none)"

// AlertNames are the monitor's alert rules (package monitor's Rule
// constants, which a test there holds to this list): what session.onAlert
// may name.
var AlertNames = []string{"egress_deny_burst", "command_deny_repeat", "resource_kill", "metadata_access",
	"escape_suspected", "startup_refused", "audit_repaired", "egress_budget"}

// EffectiveSession is the session section with every default applied.
type EffectiveSession struct {
	MemoryMB     int64   `json:"memoryMb"`
	ProcessCount int64   `json:"processCount"`
	DiskWriteMB  int64   `json:"diskWriteMb"`
	WallSeconds  float64 `json:"wallSeconds"`
	IdleSeconds  float64 `json:"idleSeconds"`
}

// SessionCaps returns the session section over its defaults.
func (p *Policy) SessionCaps() EffectiveSession {
	s := EffectiveSession{DefaultSessionMemoryMB, DefaultSessionProcessCount, DefaultSessionDiskWriteMB,
		DefaultSessionWallSeconds, DefaultSessionIdleSeconds}
	if c := p.Session; c != nil {
		set(&s.MemoryMB, c.MemoryMB)
		set(&s.ProcessCount, c.ProcessCount)
		set(&s.DiskWriteMB, c.DiskWriteMB)
		set(&s.WallSeconds, c.WallSeconds)
		set(&s.IdleSeconds, c.IdleSeconds)
	}
	return s
}

// StopsSession reports whether alert, a monitor rule's name, is one of
// session.onAlert: raised by a session's own records, it stops the
// session.
func (p *Policy) StopsSession(alert string) bool {
	return p.Session != nil && slices.Contains(p.Session.OnAlert, alert)
}

// Wall is the session's whole life, from start to teardown.
func (s EffectiveSession) Wall() time.Duration { return seconds(s.WallSeconds) }

// Idle is the longest a session may wait for its next step.
func (s EffectiveSession) Idle() time.Duration { return seconds(s.IdleSeconds) }

// seconds converts a policy's seconds to a duration.
func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

// maxSessionSeconds bounds a session's wall clock and idle timeout: a week.
const maxSessionSeconds = 7 * 86400

func checkSession(p *Policy) []*Error {
	var errs []*Error
	if _, ok := p.EgressConfig().TaskAllowlist[NoTask]; ok {
		errs = append(errs, strict.Problem(strict.Field("egress.taskAllowlist", NoTask),
			fmt.Sprintf("task name %q is reserved for sessions started without a task, which may reach nothing", NoTask), "rename the task"))
	}
	s := p.Session
	if s == nil {
		return errs
	}
	for _, f := range []struct {
		name string
		v    *int64
		max  int64
	}{{"memoryMb", s.MemoryMB, 1 << 20}, {"processCount", s.ProcessCount, 1 << 16}, {"diskWriteMb", s.DiskWriteMB, 1 << 20}} {
		if f.v != nil && (*f.v < 1 || *f.v > f.max) {
			errs = append(errs, strict.Problem("session."+f.name, fmt.Sprintf("%s must be in [1, %d], got %d", f.name, f.max, *f.v),
				"remove the field to take the default"))
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"wallSeconds", s.WallSeconds}, {"idleSeconds", s.IdleSeconds}} {
		if f.v != nil && (*f.v <= 0 || *f.v > maxSessionSeconds) {
			errs = append(errs, strict.Problem("session."+f.name, fmt.Sprintf("%s must be in (0, %d], got %v", f.name, maxSessionSeconds, *f.v),
				"remove the field to take the default"))
		}
	}
	seen := map[string]bool{}
	for i, a := range s.OnAlert {
		at := strict.Index("session.onAlert", i)
		switch {
		case !slices.Contains(AlertNames, a):
			hint := "known (the monitor's rules): " + strings.Join(AlertNames, ", ")
			if best := strict.Closest(a, AlertNames); best != "" {
				hint = fmt.Sprintf("did you mean %q? (%s)", best, hint)
			}
			errs = append(errs, strict.Problem(at, fmt.Sprintf("unknown alert %q", a), hint))
		case seen[a]:
			errs = append(errs, strict.Problem(at, fmt.Sprintf("alert %q is named twice", a), ""))
		}
		seen[a] = true
	}
	return errs
}
