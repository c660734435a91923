package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
)

// tunnel relays bytes between client and up until both directions have
// ended, then closes both. buffered holds bytes the client sent after its
// request that were read along with it; they go upstream first.
//
// An inspected entry's tunnel is served by inspect instead. Otherwise
// the client's first bytes are looked at (unless the entry's protocol is
// raw): a TLS ClientHello must name the tunnel's host, plain HTTP must
// name it in every request, and they must be the protocol the entry
// requires (docs/egress.md, "What a tunnel carries").
//
// The copies run between the connections themselves: when both are bare
// *net.TCPConn, io.Copy uses splice(2) on Linux (unless a byte budget
// counts them, or the client speaks plain HTTP). When one direction's
// source ends, its destination is half-closed (CloseWrite) and the other
// direction goes on. An error either way, the idle timeout, a budget
// reached, or Close ends both.
func (p *Proxy) tunnel(ev *Event, client net.Conn, buffered []byte, up net.Conn) error {
	if tunnelHook != nil {
		tunnelHook(client, up)
	}
	defer client.Close()
	defer up.Close()
	if ev.entry.Inspected() {
		return p.inspect(ev, client, buffered, up)
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
	ev.use.setEnd(func() { abort(errBudgetBytes) })
	stop := p.watchIdle(probe, func() {
		abort(fmt.Errorf("tunnel idle for %s", p.limits.IdleTimeout))
	})
	defer stop()

	var wg sync.WaitGroup
	var upN int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		upN = p.relayClient(ev, up, client, buffered, abort)
	}()
	downN := p.pass(client, up, ev.use, false, abort)
	wg.Wait()
	ev.BytesUp += upN
	ev.BytesDown += downN
	once.Do(func() {}) // no abort after this point: cause is final
	return cause
}

// tunnelHook, when set by a test, sees the connections of every tunnel.
var tunnelHook func(client, up net.Conn)

// errTunnelRefused ends a tunnel refused for what it carries.
var errTunnelRefused = errors.New("refused for what it carries")

// relayClient passes what the client sends, after prefix, to up: first
// looked at (sniff), then copied, or request by request when it is plain
// HTTP. A tunnel whose first bytes its entry does not allow is refused.
func (p *Proxy) relayClient(ev *Event, up, client net.Conn, prefix []byte, abort func(error)) int64 {
	f := first{data: prefix}
	if proto, _ := protocolOf(ev.entry, ev.Target); proto != egress.ProtocolRaw {
		var err error
		f, err = sniff(client, prefix)
		reason := ""
		switch {
		case err != nil && f.kind == firstTLS:
			reason = fmt.Sprintf(reasonBadHello, ev.Target, err)
		case len(f.data) > 0:
			reason = consistent(ev.entry, ev.Target, f)
		}
		if reason != "" {
			p.refused(ev, reason)
			refuseTunnel(client, f.kind, reason)
			abort(errTunnelRefused)
			return 0
		}
		if err != nil && len(f.data) == 0 {
			if errors.Is(err, io.EOF) {
				err = closeWrite(up)
			}
			if err != nil {
				abort(ignoreClosed(err))
			}
			return 0
		}
		if f.kind == firstHTTP {
			return p.relayRequests(ev, up, client, f.data, abort)
		}
	}
	n, err := send(ev.use, up, f.data, true)
	if err != nil {
		abort(ignoreClosed(err))
		return n
	}
	return n + p.pass(up, client, ev.use, true, abort)
}

// refused reports a tunnel refused for what it carries.
func (p *Proxy) refused(ev *Event, reason string) {
	r := *ev
	r.Stage, r.Decision = StageRefused, deny("%s", reason)
	r.use, r.tunnel = nil, nil
	_ = p.emit(r)
}

// ignoreClosed is err, or nil when it only says the connection was
// closed (by the other direction's abort, or by Close).
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// send writes b to dst, as much of it as u's budgets grant (out: to the
// destination); a budget that runs out ends the transfer.
func send(u *budgetUse, dst io.Writer, b []byte, out bool) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	grant, settle := u.take(out, int64(len(b)))
	n, err := dst.Write(b[:grant])
	if settle != nil {
		settle()
		if err == nil {
			err = errBudgetBytes
		}
	}
	return int64(n), err
}

// pass copies src to dst, spliced unless u's budgets count bytes, which
// are then granted as they pass. When src ends cleanly it half-closes
// dst; on an error it aborts the whole tunnel.
func (p *Proxy) pass(dst, src net.Conn, u *budgetUse, out bool, abort func(error)) int64 {
	if !u.bytesCapped() {
		n, err := io.Copy(dst, src) // splice(2) between bare TCP connections
		if err == nil {
			err = closeWrite(dst)
		}
		if err != nil {
			abort(ignoreClosed(err))
		}
		return n
	}
	buf := make([]byte, 32<<10)
	var n int64
	for {
		m, rerr := src.Read(buf)
		w, werr := send(u, dst, buf[:m], out)
		n += w
		switch {
		case werr != nil:
			abort(ignoreClosed(werr))
			return n
		case errors.Is(rerr, io.EOF):
			if err := closeWrite(dst); err != nil {
				abort(ignoreClosed(err))
			}
			return n
		case rerr != nil:
			abort(ignoreClosed(rerr))
			return n
		}
	}
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
// connections are closed), which ends the watch. Call the returned stop
// to stop watching.
func (p *Proxy) watchIdle(probe func() (time.Duration, bool), onIdle func()) (stop func()) {
	timeout := p.limits.IdleTimeout
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(timeout, func() {
		idle, ok := probe()
		switch {
		case !ok:
		case idle >= timeout:
			onIdle()
		default:
			mu.Lock()
			if !stopped {
				t.Reset(timeout - idle)
			}
			mu.Unlock()
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
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
