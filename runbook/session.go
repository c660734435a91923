package runbook

import (
	"context"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// session is what a launch needs of its sandbox and of the
// enforcer.Session that runs its steps in it (onSandbox), or a fake in
// tests.
type session interface {
	Serve(rec enforcer.EgressRecorder) error
	ProxyAddr() string
	ExecDecided(ctx context.Context, base audit.Context, st enforcer.StepRequest, d decision.Decision) (enforcer.Result, error)
	Record(ev audit.Event) (audit.Event, error)
	Probe(req enforcer.ProbeRequest) ([]enforcer.ProbeResult, error)
	Pid() int
	Freeze() (string, error)
	Evidence(dir string) (enforcer.Evidence, error)
	Close() (enforcer.Teardown, error)
}

// onSandbox is a launch's session: its sandbox, and the enforcer.Session
// opened on it (Enforcer.SessionOn), which runs the plan's steps and
// writes the launch's records, so that an alert of the policy's
// session.onAlert that one raises stops the launch.
type onSandbox struct {
	*enforcer.Sandbox
	s *enforcer.Session
}

func (o onSandbox) ExecDecided(ctx context.Context, base audit.Context, st enforcer.StepRequest, d decision.Decision) (enforcer.Result, error) {
	return o.s.ExecDecided(ctx, base, st, d)
}

func (o onSandbox) Record(ev audit.Event) (audit.Event, error) { return o.s.Record(ev) }
