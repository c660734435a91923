package proxy

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel relays bytes between client and up until both directions have
// ended, then closes both. buffered holds bytes the client sent after its
// request that were read along with it; they go upstream first.
//
// The copies run between the connections themselves: when both are bare
// *net.TCPConn, io.Copy uses splice(2) on Linux. When one direction's
// source ends, its destination is half-closed (CloseWrite) and the other
// direction goes on. An error either way, the idle timeout, or Close ends
// both.
func (p *Proxy) tunnel(ev *Event, client net.Conn, buffered []byte, up net.Conn) error {
	if tunnelHook != nil {
		tunnelHook(client, up)
	}
	defer client.Close()
	defer up.Close()
	if len(buffered) > 0 {
		n, err := up.Write(buffered)
		ev.BytesUp += int64(n)
		if err != nil {
			return err
		}
	}
	client, up, probe := idleProbe(client, up)

	var (
		once  sync.Once
		cause error
	)
	abort := func(err error) {
		once.Do(func() {
			cause = err
			client.Close()
			up.Close()
		})
	}
	wd := watch(p.limits.IdleTimeout, probe, func() {
		abort(fmt.Errorf("tunnel idle for %s", p.limits.IdleTimeout))
	})
	defer wd.stop()

	var wg sync.WaitGroup
	var upN int64
	wg.Go(func() { upN = relay(up, client, abort) })
	downN := relay(client, up, abort)
	wg.Wait()
	ev.BytesUp += upN
	ev.BytesDown += downN
	once.Do(func() {}) // no abort after this point: cause is final
	return cause
}

// tunnelHook, when set by a test, sees the connections of every tunnel.
var tunnelHook func(client, up net.Conn)

// relay copies src to dst. When src ends cleanly it half-closes dst; on an
// error it aborts the whole tunnel.
func relay(dst, src net.Conn, abort func(error)) int64 {
	n, err := io.Copy(dst, src)
	if err == nil {
		err = closeWrite(dst)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		abort(err)
	} else if err != nil {
		abort(nil) // closed by the other direction's abort or by Close
	}
	return n
}

// closeWrite half-closes c, or closes it when it cannot half-close.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// watchdog cuts a tunnel that has carried no data for a timeout.
type watchdog struct {
	timer   *time.Timer
	done    atomic.Bool
	timeout time.Duration
	probe   func() (time.Duration, bool)
	onIdle  func()
}

// watch starts a watchdog. probe reports how long the tunnel has been
// idle, or false when it can no longer tell (the connections are closed).
func watch(timeout time.Duration, probe func() (time.Duration, bool), onIdle func()) *watchdog {
	w := &watchdog{timeout: timeout, probe: probe, onIdle: onIdle}
	// Armed only once w.timer is set, so that check can see it.
	w.timer = time.AfterFunc(time.Duration(math.MaxInt64), w.check)
	w.timer.Reset(timeout)
	return w
}

func (w *watchdog) check() {
	if w.done.Load() {
		return
	}
	idle, ok := w.probe()
	switch {
	case !ok:
	case idle >= w.timeout:
		w.onIdle()
	default:
		w.timer.Reset(w.timeout - idle)
	}
}

func (w *watchdog) stop() {
	w.done.Store(true)
	w.timer.Stop()
}

// activityConn records when data last arrived on any connection of a
// tunnel, where the kernel cannot be asked. It hides splice, so it is
// only used when splice is not possible anyway.
type activityConn struct {
	net.Conn
	last *atomic.Int64 // unix nanoseconds
}

func (c *activityConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// CloseWrite half-closes the wrapped connection when it can.
func (c *activityConn) CloseWrite() error { return closeWrite(c.Conn) }

// trackActivity wraps both connections to record reads, and returns a
// probe of the time since the last one.
func trackActivity(a, b net.Conn) (net.Conn, net.Conn, func() (time.Duration, bool)) {
	last := new(atomic.Int64)
	last.Store(time.Now().UnixNano())
	probe := func() (time.Duration, bool) {
		return time.Since(time.Unix(0, last.Load())), true
	}
	return &activityConn{a, last}, &activityConn{b, last}, probe
}
