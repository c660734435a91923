package audit

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"unicode/utf8"
)

// Append writes ev at the end of the log and returns it as written, with
// Seq, TS, Prev and Hash set. When Append returns nil, the event is on
// disk. The caller fills in Kind, Decision, Reason and Context; an event
// with an unknown kind or decision, or without a reason, is refused.
//
// With WithCoalescing, a refusal that repeats one its run made within the
// second is counted instead of written (docs/audit.md, "Floods"): Append
// then returns ev as given, with Seq 0, and its count is written in a
// later count record.
func (l *Log) Append(ev Event) (Event, error) {
	ev, _, err := l.AppendAll(ev)
	return ev, err
}

// AppendAll is Append that also returns every line the call wrote, in
// file order: a chain_started record when the file was empty or an
// audit_repaired record when it ended with a damaged line, then ev, then
// the events the hook added after each of them (alerts, for the monitor).
func (l *Log) AppendAll(ev Event) (Event, []Event, error) { return l.append(ev, true) }

// ErrDecisionNotLazy is returned by AppendLazy for a gate's decision.
var ErrDecisionNotLazy = errors.New("audit: a decision (allow, deny, escalate) must be durable before the action it allows: use Append")

// AppendLazy is AppendAll for an event that no action waits on, such as a
// sandbox's launch after its decision, or a connection's end: it is
// written at once, in its place in the chain, but reaches the disk with
// the next synced append or Close instead of before AppendLazy returns,
// which saves an fdatasync. A crash may lose it, never the chain: the
// file then ends at the last synced line. A gate's decision is refused
// (ErrDecisionNotLazy).
func (l *Log) AppendLazy(ev Event) (Event, []Event, error) {
	switch ev.Decision {
	case DecisionAllow, DecisionDeny, DecisionEscalate:
		return Event{}, nil, ErrDecisionNotLazy
	}
	return l.append(ev, false)
}

// append writes ev, synced unless lazy, and returns it as written (as
// given when it was a refusal counted for a later count record) and
// every line written.
func (l *Log) append(ev Event, sync bool) (Event, []Event, error) {
	if err := checkNew(&ev); err != nil {
		return Event{}, nil, err
	}
	evs, at, err := l.do(&ev, sync, false, "")
	switch {
	case err != nil:
		return Event{}, nil, err
	case at < 0:
		return ev, evs, nil
	}
	return evs[at], evs, nil
}

// do is one append: the layers around the chain writer (commit) in
// their turn. The hook is caught up with the file; then come the records
// that open or repair it, those of abandoned runs, the count records
// due, and ev unless it is counted. It returns the lines written and ev's
// index in them, or -1.
func (l *Log) do(ev *Event, sync, force bool, run string) ([]Event, int, error) {
	if err := l.lock(); err != nil {
		return nil, 0, err
	}
	defer l.unlock()
	defer l.arm()
	now := l.now().UTC()
	counted, fresh := l.co.take(ev, now)
	dues, due := l.co.due(now, force, run)
	if (ev == nil || counted) && len(dues) == 0 {
		return nil, -1, nil
	}
	at := -1
	var held []*os.File
	b, err := l.commit(now, sync, func(b *batch) error {
		if err := l.catchUp(b.size, now); err != nil {
			return err
		}
		if err := begin(b); err != nil {
			return err
		}
		held = l.sweepRuns(b)
		for _, d := range dues {
			b.add(d)
		}
		if ev != nil && !counted {
			at = b.add(*ev)
		}
		return nil
	})
	l.releaseSwept(held, err == nil)
	if err != nil {
		l.co.failed(fresh)
		l.resetHook()
		return nil, 0, err
	}
	due()
	if fresh != nil {
		fresh.first = b.out[at]
	}
	l.appended = true
	l.keepRuns(b.out)
	if l.hook != nil {
		l.seen = l.knownSize
	}
	return b.out, at, nil
}

// checkNew refuses an event that a writer must not write.
func checkNew(ev *Event) error {
	switch {
	case !ev.Kind.Valid():
		return fmt.Errorf("audit: event has unknown kind %s", shown(string(ev.Kind)))
	case !validDecision(ev.Decision):
		return fmt.Errorf("audit: event has unknown decision %s", shown(ev.Decision))
	case ev.Reason == "":
		return errors.New("audit: event has no reason")
	case ev.Context.ChainID != "" || ev.Context.RepairedSHA256 != "" || ev.Context.RepairedBytes != 0 ||
		ev.Context.Event == EventChainStarted || ev.Context.Event == EventAuditRepaired:
		return errors.New("audit: chain_started and audit_repaired records are written by the log itself")
	}
	for k := range ev.Context.Details {
		if !utf8.ValidString(k) {
			return fmt.Errorf("audit: the details key %s is not valid UTF-8 (keys are airlock's own names)", shown(k))
		}
	}
	return nil
}

// NotWritten is the error of a writer whose record ev the log refused
// (err): "the egress allow record was not written: …", naming the record
// by its kind and its lifecycle event or decision, never by its contents.
func NotWritten(ev Event, err error) error {
	return fmt.Errorf("the %s %s record was not written: %w", ev.Kind, cmp.Or(ev.Context.Event, ev.Decision), err)
}
