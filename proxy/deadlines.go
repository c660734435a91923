package proxy

import (
	"context"
	"os"
	"sync"
	"time"
)

// deadlines enforces the proxy's timeouts (a connection's handshake, a
// lookup, a dial, a tunnel's idleness) from one goroutine that wakes on a
// coarse tick, rather than with runtime timers on every connection.
//
// Why hand-written rather than SetDeadline and context.WithTimeout: arming
// a Go timer that becomes the earliest one wakes the thread sleeping in
// the network poller, or starts another thread. A tunnel used to arm six
// (a handshake deadline set and cleared, the dial's context and its write
// deadline, the idle watchdog), and on the 2-vCPU hosts airlock is
// measured on, where waking another CPU costs tens of microseconds, they
// were a measurable part of the setup latency (bench/proxy measures it).
// The cost: a timeout fires up to one tick late. The tick is an eighth of
// the shortest timeout, at most a second.
type deadlines struct {
	tick    time.Duration
	epoch   time.Time       // monotonic origin of at
	done    <-chan struct{} // closed when the proxy closes
	onQuiet func()          // called when the goroutine stops for lack of work
	wg      sync.WaitGroup  // the goroutine

	mu      sync.Mutex
	items   []*deadline
	running bool
}

// deadline is one timeout: fire runs when it is due, unless it was
// removed first.
type deadline struct {
	at      time.Duration // since epoch
	fire    func() time.Duration
	i       int  // index in items; -1 while not armed
	removed bool // by remove: never armed again
}

// quietTicks is how many ticks with nothing to watch the goroutine waits
// before it exits (it starts again with the next timeout).
const quietTicks = 8

func newDeadlines(l Limits, done <-chan struct{}, onQuiet func()) *deadlines {
	tick := min(l.HandshakeTimeout, l.DialTimeout, l.IdleTimeout) / 8
	tick = min(max(tick, time.Millisecond), time.Second)
	return &deadlines{tick: tick, epoch: time.Now(), done: done, onQuiet: onQuiet}
}

// add arms fire to run after d. When fire returns a positive duration, it
// is armed again for that much later.
func (t *deadlines) add(d time.Duration, fire func() time.Duration) *deadline {
	x := &deadline{at: time.Since(t.epoch) + d, fire: fire}
	t.mu.Lock()
	x.i = len(t.items)
	t.items = append(t.items, x)
	start := !t.running
	t.running = true
	if start {
		t.wg.Add(1)
	}
	t.mu.Unlock()
	if start {
		go t.run()
	}
	return x
}

// remove disarms x; false when x has fired (or fires now) or was removed.
func (t *deadlines) remove(x *deadline) bool {
	if x == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	x.removed = true
	if x.i < 0 {
		return false
	}
	t.drop(x)
	return true
}

// drop removes x from items; t.mu is held.
func (t *deadlines) drop(x *deadline) {
	last := len(t.items) - 1
	t.items[x.i] = t.items[last]
	t.items[x.i].i = x.i
	t.items[last] = nil
	t.items = t.items[:last]
	x.i = -1
}

// run fires what is due on every tick, until the proxy closes or nothing
// has been armed for quietTicks ticks.
func (t *deadlines) run() {
	defer t.wg.Done()
	tk := time.NewTicker(t.tick)
	defer tk.Stop()
	quiet := 0
	var due []*deadline
	for {
		select {
		case <-t.done:
			t.mu.Lock()
			t.running = false
			t.mu.Unlock()
			return
		case <-tk.C:
		}
		now := time.Since(t.epoch)
		t.mu.Lock()
		if len(t.items) == 0 {
			if quiet++; quiet >= quietTicks {
				t.running = false
				t.mu.Unlock()
				if t.onQuiet != nil {
					t.onQuiet()
				}
				return
			}
		} else {
			quiet = 0
		}
		due = due[:0]
		for i := 0; i < len(t.items); {
			if x := t.items[i]; x.at <= now {
				t.drop(x) // moves the last item to i
				due = append(due, x)
				continue
			}
			i++
		}
		t.mu.Unlock()
		for _, x := range due {
			if again := x.fire(); again > 0 {
				t.rearm(x, now+again)
			}
		}
		clear(due)
	}
}

// rearm puts a fired deadline back for a later check.
func (t *deadlines) rearm(x *deadline, at time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if x.i >= 0 || x.removed {
		return
	}
	x.at, x.i = at, len(t.items)
	t.items = append(t.items, x)
}

// wait returns once the goroutine has exited (after the proxy closed).
func (t *deadlines) wait() { t.wg.Wait() }

// withTimeout is context.WithTimeout without a runtime timer: the returned
// context is cancelled with cause os.ErrDeadlineExceeded once d has passed
// (see timedOut).
func (t *deadlines) withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	x := t.add(d, func() time.Duration {
		cancel(os.ErrDeadlineExceeded)
		return 0
	})
	return ctx, func() {
		t.remove(x)
		cancel(context.Canceled)
	}
}

// timedOut reports whether ctx, from withTimeout, ran out of time.
func timedOut(ctx context.Context) bool {
	return context.Cause(ctx) == os.ErrDeadlineExceeded
}
