package authoring

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// Outcome is one example or test case, decided by the policy's gates.
type Outcome struct {
	// Where is the example's place in the policy (file:line:col) or the
	// case's in its file (file:line).
	Where string `json:"where"`
	// Subject is the tool or the task that decided: "tool run_tests",
	// "task ci".
	Subject string `json:"subject"`
	// What is the command line (as one line of shell), the destination
	// or the request.
	What string `json:"what"`
	// Want is what the example or case says, Got what the gates decided
	// ("allow (pytest)", "not by rule pytest", "deny").
	Want string `json:"want"`
	Got  string `json:"got"`
	// Reason is the gate's reason for Got.
	Reason string `json:"reason"`
	// OK is whether the policy decides as the example or case says.
	OK bool `json:"ok"`
}

// example is one example of a policy, located by its field's path.
type example struct {
	at      *policy.Error // its place: the path, then the file, line and column
	outcome Outcome
}

// Examples decides every example l carries, in file order: a command
// rule's with the command gate, an allowlist entry's with the egress gate
// (and, for a request to an inspected entry, its rules).
//
// A rule's match example must be decided with the rule's verdict, by
// that rule; a not-match example by anything but that rule. An entry's
// match example must be allowed through that entry (a request, by its
// rules too, when it is inspected); a not-match example must not.
func Examples(l *policy.Loaded) ([]Outcome, error) {
	xs, err := examples(l)
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, len(xs))
	for i, x := range xs {
		out[i] = x.outcome
	}
	return out, nil
}

func examples(l *policy.Loaded) ([]example, error) {
	d, err := newDecider(l.Policy, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Source, err)
	}
	var xs []example
	add := func(path string, o Outcome) { xs = append(xs, example{at: &policy.Error{Path: path}, outcome: o}) }
	l.EachRule(func(tool, list, at string, r policy.CommandPattern) {
		if r.Examples == nil {
			return
		}
		v := map[string]decision.Verdict{"deny": decision.Deny, "escalate": decision.Escalate, "allow": decision.Allow}[list]
		for j, argv := range r.Examples.Match {
			add(strict.Index(at+".examples.match", j), commandExample(d, tool, argv, r.Name, v, true))
		}
		for j, argv := range r.Examples.NotMatch {
			add(strict.Index(at+".examples.notMatch", j), commandExample(d, tool, argv, r.Name, v, false))
		}
	})
	if l.Egress != nil {
		for _, task := range sortedKeys(l.Egress.TaskAllowlist) {
			for i, e := range l.Egress.TaskAllowlist[task] {
				if e.Examples == nil {
					continue
				}
				at := strict.Index(strict.Field("egress.taskAllowlist", task), i) + ".examples"
				for j, s := range e.Examples.Match {
					add(strict.Index(at+".match", j), entryExample(d, task, s, e.Host, true))
				}
				for j, s := range e.Examples.NotMatch {
					add(strict.Index(at+".notMatch", j), entryExample(d, task, s, e.Host, false))
				}
			}
		}
	}
	// The decoder's positions place each example, as they place a
	// validation problem.
	errs := make(policy.Errors, len(xs))
	for i := range xs {
		errs[i] = xs[i].at
	}
	l.Place(errs)
	slices.SortStableFunc(xs, func(a, b example) int {
		return cmp.Or(cmp.Compare(a.at.Line, b.at.Line), cmp.Compare(a.at.Col, b.at.Col))
	})
	for i := range xs {
		xs[i].outcome.Where = fmt.Sprintf("%s:%d:%d", xs[i].at.File, xs[i].at.Line, xs[i].at.Col)
	}
	return xs, nil
}

func commandExample(d *decider, tool string, argv []string, rule string, v decision.Verdict, match bool) Outcome {
	dec := d.command(tool, argv)
	o := Outcome{Subject: "tool " + tool, What: termtext.Argv(argv), Got: shown(dec), Reason: dec.Why()}
	byRule := dec.Rule == rule
	if match {
		o.Want = fmt.Sprintf("%s (%s)", v, rule)
		o.OK = byRule && dec.Verdict == v
	} else {
		o.Want = "not by rule " + rule
		o.OK = !byRule
	}
	return o
}

func entryExample(d *decider, task, s, entry string, match bool) Outcome {
	o := Outcome{Subject: "task " + task, What: termtext.Escape(s)}
	x, err := policy.ParseEntryExample(s)
	if err != nil { // loading checked the shape: a policy built otherwise
		o.Want, o.Got, o.Reason = "a valid example", "invalid", err.Error()
		return o
	}
	host, req := d.request(task, x)
	allowed := host.Allowed() && host.Rule == entry && req.Allowed()
	o.Got, o.Reason = shown(req), req.Why()
	if match {
		o.Want = fmt.Sprintf("allow (%s)", entry)
		o.OK = allowed
	} else {
		o.Want = "not through entry " + entry
		o.OK = !allowed
	}
	return o
}

// CheckExamples is policy check's use of Examples: how many examples l
// carries, and nil when each is decided as it says, else the errors of
// those that are not, at their file:line:col, in file order, each saying
// what the gate decided and why.
func CheckExamples(l *policy.Loaded) (int, error) {
	xs, err := examples(l)
	if err != nil {
		return 0, err
	}
	var errs policy.Errors
	for _, x := range xs {
		if o := x.outcome; !o.OK {
			e := *x.at
			e.Msg = fmt.Sprintf("example %s of %s: want %s, the policy decides %s", o.What, o.Subject, o.Want, o.Got)
			e.Hint = o.Reason
			errs = append(errs, &e)
		}
	}
	if len(errs) == 0 {
		return len(xs), nil
	}
	return len(xs), errs
}
