package runbook

import (
	"context"
	"net"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// session is what a launch needs of its sandbox: *sandbox.Session, or a
// fake in tests.
type session interface {
	Exec(ctx context.Context, st sandbox.Step) (sandbox.Result, error)
	Listener() net.Listener
	Pid() int
	Freeze() (string, error)
	Evidence(dir string) (sandbox.Evidence, error)
	Close() (sandbox.Teardown, error)
}

// prober is a session that can run the start-up probes again between
// steps, from its init, and report each probe's outcome.
type prober interface {
	Probe(req sandbox.ProbeRequest) ([]sandbox.ProbeResult, error)
}

// startSession starts the real sandbox session. When the session cannot
// report probe results (no Probe method), the start-up probes run through
// Config.Probes instead, which fails the start on any failed probe.
func startSession(ctx context.Context, cfg sandbox.Config) (session, error) {
	ss, err := sandbox.StartSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return ss, nil
}

// canProbe reports whether sessions made by startSession report probes.
func canProbe() bool {
	var ss any = (*sandbox.Session)(nil)
	_, ok := ss.(prober)
	return ok
}
