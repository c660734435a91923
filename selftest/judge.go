package selftest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/payload"
)

// observation is everything the battery saw of one run.
type observation struct {
	res     enforcer.Result
	err     error
	reports []payload.Report
	stdout  string
	stderr  string
	// events are the audit events of the run.
	events []audit.Event
	// dials are upstream addresses off loopback that the proxy asked the
	// battery's guard to dial (and the guard refused): each is a hole in
	// the egress gate.
	dials []string
	// timedOut is set when the battery's own deadline ended the run: no
	// cap did.
	timedOut bool
}

// last is the payload's last report.
func (o *observation) last() (payload.Report, bool) {
	if len(o.reports) == 0 {
		return payload.Report{}, false
	}
	return o.reports[len(o.reports)-1], true
}

// launched reports whether a sandbox was launched for the run.
func (o *observation) launched() bool {
	return slices.ContainsFunc(o.events, func(ev audit.Event) bool {
		return ev.Kind == audit.KindLifecycle && ev.Context.Event == audit.EventSandboxLaunched
	})
}

// egress returns the egress gate's decisions (allow or deny) of the run.
func (o *observation) egress() []audit.Event {
	var out []audit.Event
	for _, ev := range o.events {
		if ev.Kind == audit.KindEgress && (ev.Decision == audit.DecisionAllow || ev.Decision == audit.DecisionDeny) {
			out = append(out, ev)
		}
	}
	return out
}

// tail is the end of s on one line, for evidence.
func tail(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ran returns the payload's last report, or the broken verdict of a run
// in which the payload did not get to make its attempt.
func ran(o *observation) (payload.Report, *verdict) {
	fail := func(format string, a ...any) (payload.Report, *verdict) {
		v := broken(fmt.Sprintf(format, a...))
		return payload.Report{}, &v
	}
	switch {
	case o.res.ExitCode == enforcer.ExitSetup:
		return fail("airlock could not run the payload: %v", o.err)
	case o.res.Decision != decision.Allow:
		return fail("the command gate refused the payload itself: %s", o.res.Reason)
	case o.err != nil:
		return fail("the run ended with an error: %v", o.err)
	}
	rep, ok := o.last()
	switch {
	case !ok:
		return fail("the payload reported nothing (exit %d, signal %d): %s", o.res.ExitCode, o.res.Signal, tail(o.stderr, 200))
	case rep.Detail["broken"] == "true":
		return fail("the payload could not make its attempt: %s", rep.Evidence)
	}
	return rep, nil
}

// errnoIs judges an attempt refused by the kernel: contained when the
// payload's errno is one of want, ESCAPED when the attempt got through,
// and broken on any other errno (another control, or none, answered).
func errnoIs(want ...string) func(o *observation) verdict {
	return func(o *observation) verdict {
		rep, v := ran(o)
		if v != nil {
			return *v
		}
		return errnoVerdict(rep, want)
	}
}

// udpOr wraps the judge of a UDP attempt: in a sandbox without a memory
// cgroup the third seccomp filter refuses UDP sockets (EACCES) before the
// network namespace is reached, and the receipt says so; that refusal
// holds too.
func udpOr(judge func(*observation) verdict) func(*observation) verdict {
	return func(o *observation) verdict {
		rep, v := ran(o)
		if v == nil && !rep.Succeeded && rep.Errno == "EACCES" && strings.Contains(o.res.Receipt["seccomp"], "third filter (no memory cgroup)") {
			return contained("EACCES: UDP sockets refused by the no-memory-cgroup filter: " + rep.Evidence)
		}
		return judge(o)
	}
}

func errnoVerdict(rep payload.Report, want []string) verdict {
	switch {
	case rep.Succeeded:
		return escaped(rep.Evidence)
	case slices.Contains(want, rep.Errno):
		return contained(rep.Errno + ": " + rep.Evidence)
	case rep.Errno == "":
		return broken(fmt.Sprintf("refused without an errno (want %s): %s", strings.Join(want, " or "), rep.Evidence))
	}
	return broken(fmt.Sprintf("unexpected %s (want %s): %s", rep.Errno, strings.Join(want, " or "), rep.Evidence))
}

// filtered judges an attempt the seccomp filter must refuse with want.
// When the payload sent a probe (the same call with arguments the kernel
// refuses with another errno), the probe must have got want too: that is
// what shows the filter, not the kernel, answered.
func filtered(want string) func(o *observation) verdict {
	return func(o *observation) verdict {
		rep, v := ran(o)
		if v != nil {
			return *v
		}
		res := errnoVerdict(rep, []string{want})
		if res.outcome != Contained {
			return res
		}
		probe, hasProbe := rep.Detail["probe"]
		switch {
		case hasProbe && probe != want:
			return broken(fmt.Sprintf("%s, but the probe got %s (the kernel's answer is %s): the filter did not answer this call, another control did",
				rep.Errno, orNone(probe), rep.Detail["probeKernel"]))
		case hasProbe:
			return contained(fmt.Sprintf("%s from the filter (its probe got %s too; the kernel answers %s): %s",
				rep.Errno, probe, rep.Detail["probeKernel"], rep.Evidence))
		case rep.Detail["kernelWould"] != "":
			return contained(fmt.Sprintf("%s from the filter (the kernel would %s): %s", rep.Errno, rep.Detail["kernelWould"], rep.Evidence))
		}
		return res
	}
}

func orNone(s string) string {
	if s == "" {
		return "no error"
	}
	return s
}

// killedBy judges an attempt a cap must kill.
func killedBy(cap string) func(o *observation) verdict {
	return func(o *observation) verdict {
		if o.res.ExitCode == enforcer.ExitSetup || o.res.Decision != decision.Allow {
			_, v := ran(o)
			return *v
		}
		usage := fmt.Sprintf("after %d ms wall, %d ms CPU, peak %d MiB", o.res.WallMs, o.res.CPUMs, o.res.PeakMemoryBytes>>20)
		rep, reported := o.last()
		switch {
		case o.res.KilledBy != nil && *o.res.KilledBy == cap:
			return contained(fmt.Sprintf("killedBy %s %s (exit %d)", cap, usage, o.res.ExitCode))
		case o.res.KilledBy != nil:
			return broken(fmt.Sprintf("killed by the %s cap, not %s, %s", *o.res.KilledBy, cap, usage))
		case o.timedOut:
			return escaped(fmt.Sprintf("no cap stopped it: the battery's own deadline ended the run %s", usage))
		case reported && rep.Succeeded:
			return escaped(rep.Evidence + " " + usage)
		case !reported:
			return broken(fmt.Sprintf("the payload reported nothing and no cap killed it (exit %d, signal %d): %s", o.res.ExitCode, o.res.Signal, tail(o.stderr, 200)))
		}
		return broken(fmt.Sprintf("no cap killed it (exit %d, signal %d) %s: %s", o.res.ExitCode, o.res.Signal, usage, rep.Evidence))
	}
}

// egressRefused judges an attempt through the proxy: the egress gate's
// audited decision must be a denial whose reason contains want, no
// decision may allow it, the proxy must not have dialled anything off
// loopback, and the payload must have seen the proxy's refusal (403 with
// X-Airlock-Reason, or SOCKS5 reply 2).
func egressRefused(want string) func(o *observation) verdict {
	return func(o *observation) verdict {
		rep, v := ran(o)
		if v != nil {
			return *v
		}
		if len(o.dials) > 0 {
			return escaped("the egress gate let the proxy dial " + strings.Join(o.dials, ", ") + " (the battery's guard refused the dial)")
		}
		if rep.Succeeded {
			return escaped(rep.Evidence)
		}
		var deny *audit.Event
		for _, ev := range o.egress() {
			if ev.Decision == audit.DecisionAllow {
				return escaped("the egress gate allowed it: " + ev.Reason)
			}
			deny = &ev
		}
		if deny == nil {
			return broken("the proxy recorded no egress decision; the payload saw: " + rep.Evidence)
		}
		if !strings.Contains(deny.Reason, want) {
			return broken(fmt.Sprintf("denied for another reason (want %q): %s", want, deny.Reason))
		}
		refusal := (rep.Detail["status"] == "403" && rep.Detail["reason"] != "") || rep.Detail["reply"] == "2"
		if !refusal {
			return broken("the egress gate denied it, but the payload saw no refusal from the proxy: " + rep.Evidence)
		}
		return contained(fmt.Sprintf("audit seq %d: %s; the payload saw %s", deny.Seq, deny.Reason, payloadSaw(rep)))
	}
}

func payloadSaw(rep payload.Report) string {
	if rep.Detail["reply"] != "" {
		return "SOCKS5 reply " + rep.Detail["reply"]
	}
	return "HTTP " + rep.Detail["status"] + " with X-Airlock-Reason"
}

// gateRefused judges a request the command gate must refuse: the verdict
// is want (deny or escalate), the reason contains reason, airlock exited
// with the verdict's status (77 denied, 75 escalated), and no sandbox was
// launched.
func gateRefused(want decision.Verdict, reason string) func(o *observation) verdict {
	code := enforcer.ExitDenied
	if want == decision.Escalate {
		code = enforcer.ExitEscalated
	}
	return func(o *observation) verdict {
		switch {
		case o.launched():
			return escaped("a sandbox was launched for it: " + o.res.Reason)
		case o.res.Decision == decision.Allow:
			return escaped("the command gate allowed it: " + o.res.Reason)
		case o.res.Decision != want:
			return broken(fmt.Sprintf("decision %s, want %s: %s", o.res.Decision, want, o.res.Reason))
		case o.res.ExitCode != code:
			return broken(fmt.Sprintf("exit %d, want %d: %s", o.res.ExitCode, code, o.res.Reason))
		case !strings.Contains(o.res.Reason, reason):
			return broken(fmt.Sprintf("reason %q does not say %q", o.res.Reason, reason))
		case !slices.ContainsFunc(o.events, func(ev audit.Event) bool { return ev.Kind == audit.KindCommand }):
			return broken("the decision is not in the audit stream")
		}
		return contained(fmt.Sprintf("%s: %s; exit %d, no sandbox launched", o.res.Decision, o.res.Reason, o.res.ExitCode))
	}
}

// cgroupSkip says whether an attempt needing a cgroup must be skipped:
// only when the receipt of the preflight run says no cgroup could be made
// and names another mechanism for the control.
func cgroupSkip(needs string, receipt map[string]string) (string, bool) {
	key := map[string]string{
		limits.RequireCgroupMemory: limits.ControlMemory,
		limits.RequireCgroupPids:   limits.ControlTasks,
		limits.RequireCgroupCPU:    limits.ControlCPU,
	}[needs]
	mech, note := receipt[key], receipt[limits.NoteCgroupUnavailable]
	if key == "" || note == "" || strings.Contains(mech, "cgroup v") {
		return "", false
	}
	return fmt.Sprintf("skipped: no cgroup delegation: the run's receipt gives %s as %q (cgroup unavailable: %s)", key, mech, note), true
}
