package runbook

import (
	"context"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// session is what a launch needs of its sandbox: *enforcer.Sandbox, or a
// fake in tests.
type session interface {
	Serve(rec enforcer.EgressRecorder) error
	ProxyAddr() string
	Step(ctx context.Context, base audit.Context, st enforcer.StepRequest, d decision.Decision) (enforcer.Result, error)
	Probe(req enforcer.ProbeRequest) ([]enforcer.ProbeResult, error)
	Pid() int
	Freeze() (string, error)
	Evidence(dir string) (enforcer.Evidence, error)
	Close() (enforcer.Teardown, error)
}
