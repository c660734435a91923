package proxy

import "time"

// emit reports ev to the callbacks and returns Record's error.
func (p *Proxy) emit(ev Event) error {
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
	return Event{Stage: StageDecided, Time: time.Now(), Task: p.task, Client: client, Protocol: proto, Requested: requested, client: clientOf(client)}
}

// finish reports the end of an allowed request.
func (p *Proxy) finish(ev *Event, err error) {
	// The slot is free before the close is reported: a caller that sees
	// the report may open a tunnel at once.
	ev.tunnel.release()
	ev.tunnel = nil
	ev.Stage = StageClosed
	ev.Duration = time.Since(ev.Time)
	ev.Err = err
	_ = p.emit(*ev)
}
