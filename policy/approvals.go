package policy

import (
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// EffectiveApprovals is the approvals section with defaults applied.
type EffectiveApprovals struct {
	// Decider is the decider's argv, nil when there is none.
	Decider []string
	// DeciderTimeout and TTL are the decider's time limit and a request's life.
	DeciderTimeout, TTL time.Duration
}

// ApprovalConfig returns the approvals section with defaults applied.
func (p *Policy) ApprovalConfig() EffectiveApprovals {
	c := EffectiveApprovals{DeciderTimeout: approval.DefaultDeciderTimeout, TTL: approval.DefaultTTL}
	if a := p.Approvals; a != nil {
		c.Decider = a.Decider
		if a.DeciderTimeoutSeconds != nil {
			c.DeciderTimeout = seconds(*a.DeciderTimeoutSeconds)
		}
		if a.TTLSeconds != nil {
			c.TTL = seconds(*a.TTLSeconds)
		}
	}
	return c
}

func checkApprovals(p *Policy) []*Error {
	a := p.Approvals
	if a == nil {
		return nil
	}
	var errs []*Error
	if a.Decider != nil {
		switch prog := a.Decider; {
		case len(prog) == 0:
			errs = append(errs, strict.Problem("approvals.decider", "empty decider", "name a program, e.g. [\"/usr/local/bin/decide\"], or leave the field out"))
		case !path.IsAbs(prog[0]) || path.Clean(prog[0]) != prog[0] || !strict.PlainText(prog[0]) || strings.ContainsAny(prog[0], " \x00"):
			errs = append(errs, strict.Problem("approvals.decider[0]", fmt.Sprintf("decider %q is not a clean absolute path", prog[0]),
				"the decider runs outside the sandbox and is never looked up in $PATH; name it by its absolute path"))
		}
		for i, arg := range a.Decider {
			if strings.IndexByte(arg, 0) >= 0 || !utf8.ValidString(arg) {
				errs = append(errs, strict.Problem(strict.Index("approvals.decider", i), "argument has a NUL byte or invalid UTF-8", ""))
			}
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
		max  time.Duration
	}{{"deciderTimeoutSeconds", a.DeciderTimeoutSeconds, approval.MaxDeciderTimeout}, {"ttlSeconds", a.TTLSeconds, approval.MaxTTL}} {
		if f.v != nil && (*f.v <= 0 || seconds(*f.v) > f.max) {
			errs = append(errs, strict.Problem("approvals."+f.name, fmt.Sprintf("%s must be in (0, %v], got %v", f.name, f.max.Seconds(), *f.v), "remove the field to take the default"))
		}
	}
	return errs
}
