package proxy

import "sync/atomic"

// workers runs the proxy's per-connection goroutines (a connection's
// handshake and tunnel, a tunnel's second relay) on goroutines kept from
// earlier connections, when one is idle, rather than on new ones.
//
// Why: a new goroutine starts with a small stack, and a connection's code
// (net/http's request parser, the dialer, splice) grows it several times
// over; each growth copies the stack. That copying was a tenth of the
// proxy's CPU time per tunnel (pprof, bench/proxy), and on a 2-core host
// the client competes for that CPU. A kept goroutine has its stack
// already. Hand-written: a pool this small is clearer than a dependency.
//
// At most maxIdle workers wait; more end when their job does. Idle
// workers end when the proxy closes, and when it has been idle long
// enough for its timeouts goroutine to stop (see retire).
type workers struct {
	jobs chan func()  // unbuffered: a send succeeds only when a worker waits
	idle atomic.Int32 // workers waiting on jobs
	done <-chan struct{}
}

// maxIdle bounds the workers kept waiting (each holds its stack, a few
// to a few tens of KiB).
const maxIdle = 64

func newWorkers(done <-chan struct{}) *workers {
	return &workers{jobs: make(chan func()), done: done}
}

// run runs fn on an idle worker, or on a new one.
func (w *workers) run(fn func()) {
	select {
	case w.jobs <- fn:
	default:
		go w.loop(fn)
	}
}

// loop runs jobs until there are enough idle workers, the proxy closes,
// or retire hands it a nil job.
func (w *workers) loop(fn func()) {
	for fn != nil {
		fn()
		fn = nil // let the job's closure go while waiting
		if w.idle.Add(1) > maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case fn = <-w.jobs:
		case <-w.done:
		}
		w.idle.Add(-1)
	}
}

// retire ends the workers waiting now.
func (w *workers) retire() {
	for {
		select {
		case w.jobs <- nil:
		default:
			return
		}
	}
}
