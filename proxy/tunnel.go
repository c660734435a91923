package proxy

import (
	"errors"
	"fmt"
	"io"
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
	wd := p.watchIdle(probe, func() {
		abort(fmt.Errorf("tunnel idle for %s", p.limits.IdleTimeout))
	})
	defer p.timeouts.remove(wd)

	var wg sync.WaitGroup
	var upN int64
	wg.Add(1)
	p.workers.run(func() {
		defer wg.Done()
		upN = relay(up, client, abort)
	})
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

// watchIdle cuts a tunnel that has carried no data for the idle
// timeout: it calls onIdle once probe says so. probe reports how long the
// tunnel has been idle, or false when it can no longer tell (the
// connections are closed), which ends the watch. Remove the returned
// deadline to stop watching.
func (p *Proxy) watchIdle(probe func() (time.Duration, bool), onIdle func()) *deadline {
	timeout := p.limits.IdleTimeout
	return p.timeouts.add(timeout, func() time.Duration {
		idle, ok := probe()
		switch {
		case !ok:
		case idle >= timeout:
			onIdle()
		default:
			return timeout - idle
		}
		return 0
	})
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
