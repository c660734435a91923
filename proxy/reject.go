package proxy

import (
	"fmt"
	"sync"
	"time"
)

// rejectKind groups the refusals the proxy makes before any egress
// decision, for coalescing.
type rejectKind uint8

const (
	rejectShare  rejectKind = iota // a connection past its share of MaxConns
	rejectSOCKS4                   // SOCKS4 or SOCKS4a
	rejectSOCKS5                   // a malformed SOCKS5 greeting or request
	rejectHTTP                     // a malformed, oversized or non-proxy HTTP request
	rejectAuth                     // a gateway's client not authenticated
	rejectKinds
)

// The coalescing of refusals: at most rejectBurst events in a window of
// rejectWindow; beyond that, each kind is counted and reported once when
// the window ends, as one event with its count.
const (
	rejectBurst  = 10
	rejectWindow = time.Second
)

// maxRequestedBytes bounds how much of a refused request an event keeps.
const maxRequestedBytes = 256

// rejects reports the refusals the proxy makes before any decision, so
// that they reach the audit stream, but bounded: a flood is counted, not
// recorded line by line. Hand-written: a counter per kind and a timer.
type rejects struct {
	emit   func(Event)
	burst  int           // rejectBurst
	window time.Duration // rejectWindow

	mu     sync.Mutex
	start  time.Time // of the current window
	sent   int       // events reported in it
	held   [rejectKinds]heldReject
	timer  *time.Timer // ends the window while refusals are held
	closed bool
}

// heldReject is the first refusal of a kind held back in a window, and
// how many were.
type heldReject struct {
	ev Event
	n  int
}

func newRejects(emit func(Event)) *rejects {
	return &rejects{emit: emit, burst: rejectBurst, window: rejectWindow}
}

// add reports ev, a refusal of kind k, or holds it for the window's end.
func (r *rejects) add(k rejectKind, ev Event) {
	ev.Stage, ev.Count = StageRejected, 1
	ev.Requested = clip(ev.Requested)
	r.mu.Lock()
	now := time.Now()
	if r.timer == nil && now.Sub(r.start) >= r.window {
		r.start, r.sent = now, 0
	}
	if r.sent < r.burst || r.closed {
		r.sent++
		r.mu.Unlock()
		r.emit(ev)
		return
	}
	h := &r.held[k]
	if h.n == 0 {
		h.ev = ev
	}
	h.n++
	if r.timer == nil {
		r.timer = time.AfterFunc(r.start.Add(r.window).Sub(now), r.flush)
	}
	r.mu.Unlock()
}

// flush reports what was held back, one event per kind, and starts a new
// window.
func (r *rejects) flush() {
	r.mu.Lock()
	held := r.held
	r.held = [rejectKinds]heldReject{}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.start, r.sent = time.Now(), 0
	r.mu.Unlock()
	for _, h := range held {
		if h.n == 0 {
			continue
		}
		ev := h.ev
		if h.n > 1 {
			ev.Count = h.n
			ev.Decision.Reason = fmt.Sprintf("%d refusals like this one within %s, counted rather than recorded one by one; the first: %s",
				h.n, r.window, ev.Decision.Reason)
		}
		r.emit(ev)
	}
}

// close reports what is held back; later refusals are reported at once.
func (r *rejects) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.flush()
}

// reject reports a refusal made before any egress decision.
func (p *Proxy) reject(k rejectKind, proto Protocol, remote, requested, reason string) {
	ev := p.newEvent(proto, remote, requested)
	ev.Decision = deny("%s", reason)
	p.rejects.add(k, ev)
}
