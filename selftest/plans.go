package selftest

import (
	"fmt"
	"strings"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// payloadRequest asks tool to run a payload of airlock's own binary, bound
// into the sandbox at sandbox.SelfPath.
func payloadRequest(tool, task string, args ...string) enforcer.Request {
	return enforcer.Request{Tool: tool, Task: task, Command: sandbox.SelfPath, Args: append([]string{"payload"}, args...)}
}

// payloadAttempt is an attempt that runs one payload and judges it with
// judge, with nothing to set up on the host.
func payloadAttempt(f Family, name, control, what, tool, task string, judge func(*observation) verdict, args ...string) attempt {
	return attempt{family: f, name: name, control: control, what: what, sandboxed: true,
		plan: func(*fixtures) (*plan, error) {
			return &plan{req: payloadRequest(tool, task, args...), judge: judge}, nil
		}}
}

// slowAttempt is a payloadAttempt that takes seconds (a cap that trips
// on time), and needs the cgroup needs names, if any (attempt.needs).
func slowAttempt(f Family, name, control, what, tool, needs string, judge func(*observation) verdict, args ...string) attempt {
	a := payloadAttempt(f, name, control, what, tool, taskNone, judge, args...)
	a.slow, a.needs = true, needs
	return a
}

// settled is a plan whose verdict is known before it runs (a skip, or a
// host with nothing to try): the payload only says hello, and v stands.
func settled(v verdict) *plan {
	return &plan{req: payloadRequest(toolPayload, taskNone, "hello"), judge: func(*observation) verdict { return v }}
}

// withWorkspace sets req's workspace.
func withWorkspace(req enforcer.Request, ws string) enforcer.Request {
	req.Workspace = ws
	return req
}

// withCanary wraps judge: anything the host's canary received is an
// escape, whatever the payload says; otherwise the canary's silence is
// added to the evidence.
func withCanary(c *canary, judge func(*observation) verdict) func(*observation) verdict {
	return func(o *observation) verdict {
		if c.hits.Load() > 0 {
			return escaped(c.seen())
		}
		v := judge(o)
		v.evidence += "; " + c.seen()
		return v
	}
}

// notSecret wraps judge: a report carrying the canary secret is an escape
// whatever else it says.
func notSecret(secret string, judge func(*observation) verdict) func(*observation) verdict {
	return func(o *observation) verdict {
		for _, r := range o.reports {
			if strings.Contains(r.Detail["head"], secret) || strings.Contains(r.Evidence, secret) {
				return escaped("the payload read the host's canary secret")
			}
		}
		if strings.Contains(o.stdout, secret) {
			return escaped("the host's canary secret reached the payload's output")
		}
		return judge(o)
	}
}

// notSucceeded judges an observation attempt (the payload looks and
// reports what it found): contained when the payload found no way out.
func notSucceeded(o *observation) verdict {
	rep, v := ran(o)
	if v != nil {
		return *v
	}
	if rep.Succeeded {
		return escaped(rep.Evidence)
	}
	return contained(rep.Evidence)
}

// detailIs wraps judge with a check on one detail of the last report.
func detailIs(key, want string, judge func(*observation) verdict) func(*observation) verdict {
	return func(o *observation) verdict {
		v := judge(o)
		if v.outcome != Contained {
			return v
		}
		rep, _ := o.last()
		if got := rep.Detail[key]; got != want {
			return broken(fmt.Sprintf("%s is %q, want %q: %s", key, got, want, v.evidence))
		}
		return v
	}
}
