package proxy

import (
	"errors"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
)

// emit reports ev to the callbacks and returns Record's error. No
// credential value is in what it reports.
func (p *Proxy) emit(ev Event) error {
	p.scrubEvent(&ev)
	p.metrics.observe(&ev)
	if p.onEvent != nil {
		p.onEvent(ev)
	}
	if p.record != nil {
		if err := p.record(ev); err != nil {
			return &recordError{err}
		}
	}
	return nil
}

// decided reports the decision on ev. It returns an error when the
// decision allows the request but could not be recorded: the request
// must then not go ahead.
func (p *Proxy) decided(ev *Event) error {
	err := p.emit(*ev)
	if err != nil && ev.Decision.Allowed() {
		return err
	}
	return nil
}

// newEvent starts the event of one request.
func (p *Proxy) newEvent(proto Protocol, client, requested string) Event {
	return Event{Stage: StageDecided, Time: time.Now(), Task: p.task, Identity: p.identity, Client: client, Protocol: proto, Requested: requested, client: clientOf(client)}
}

// finish reports the end of an allowed request.
func (p *Proxy) finish(ev *Event, err error) {
	// The slot is free before the close is reported: a caller that sees
	// the report may open a tunnel at once.
	ev.tunnel.release()
	ev.tunnel = nil
	ev.use.done()
	ev.Stage = StageClosed
	ev.Duration = time.Since(ev.Time)
	ev.Err = err
	_ = p.emit(*ev)
}

// budgetReached reports a budget's cap reached.
func (p *Proxy) budgetReached(x budgetCrossing) {
	ev := p.newEvent(ProtocolUnknown, "", x.host)
	ev.Stage, ev.Budget, ev.Decision = StageBudget, x.budget, deny("%s", x.reason)
	ev.Requested = x.cap
	if x.host != "" {
		ev.Target, _ = egress.ParseTarget(x.host, 0)
	}
	_ = p.emit(ev)
}

// ResetStep starts the per-step budgets over (Budget.PerStep): a session
// calls it before each step.
func (p *Proxy) ResetStep() { p.budget.resetStep() }

// upstreamError is an allowed request's failure to reach its
// destination: its name did not resolve, no address took the connection,
// or the destination failed the request before it answered (TLS, a reset,
// a timeout). Event.Failed reports it.
type upstreamError struct{ err error }

func (e *upstreamError) Error() string { return e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// Failed reports whether ev is the end of an allowed request that could
// not reach its destination (StageClosed, Err an upstream failure): a
// name that did not resolve, a refused or timed-out connection, a failed
// TLS handshake or request. The proxy's own ends (a budget, a refusal for
// what a tunnel carried, its shutdown) and a client that left are not.
func (ev Event) Failed() bool {
	var u *upstreamError
	return ev.Stage == StageClosed && errors.As(ev.Err, &u)
}
