package runbook

import (
	"context"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// session is what a launch needs of its sandbox: *enforcer.Sandbox, or a
// fake in tests.
type session interface {
	Serve(rec enforcer.EgressRecorder) error
	ProxyAddr() string
	Exec(ctx context.Context, st enforcer.SandboxStep) (enforcer.StepOutcome, error)
	Probe(req enforcer.ProbeRequest) ([]enforcer.ProbeResult, error)
	Pid() int
	Freeze() (string, error)
	Evidence(dir string) (enforcer.Evidence, error)
	Close() (enforcer.Teardown, error)
}

// startSandbox starts the plan's sandbox (enforcer.StartSandbox).
func startSandbox(ctx context.Context, e *enforcer.Enforcer, req enforcer.SandboxRequest) (session, error) {
	sb, err := e.StartSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	return sb, nil
}
