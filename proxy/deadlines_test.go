package proxy

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func testDeadlines(t *testing.T, tick time.Duration) *deadlines {
	done := make(chan struct{})
	d := newDeadlines(Limits{HandshakeTimeout: 8 * tick, DialTimeout: 8 * tick, IdleTimeout: 8 * tick}, done, nil)
	t.Cleanup(func() { close(done); d.wait() })
	if d.tick != tick {
		t.Fatalf("tick %s, want %s", d.tick, tick)
	}
	return d
}

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// TestDeadlinesFire: a deadline fires once, not before it is due; a removed
// one never fires; one that asks to be checked again fires again.
func TestDeadlinesFire(t *testing.T) {
	d := testDeadlines(t, 5*time.Millisecond)
	var fired, removed, again atomic.Int32
	start := time.Now()
	var firedAt atomic.Int64
	d.add(30*time.Millisecond, func() time.Duration {
		firedAt.Store(int64(time.Since(start)))
		fired.Add(1)
		return 0
	})
	x := d.add(30*time.Millisecond, func() time.Duration { removed.Add(1); return 0 })
	if !d.remove(x) || d.remove(x) {
		t.Fatal("remove: want true the first time, false after")
	}
	d.add(10*time.Millisecond, func() time.Duration {
		if again.Add(1) < 3 {
			return 10 * time.Millisecond
		}
		return 0
	})
	waitFor(t, "all fired", func() bool { return fired.Load() == 1 && again.Load() == 3 })
	time.Sleep(50 * time.Millisecond)
	if fired.Load() != 1 || removed.Load() != 0 || again.Load() != 3 {
		t.Errorf("fired %d times (want 1), removed one %d (want 0), re-armed one %d (want 3)", fired.Load(), removed.Load(), again.Load())
	}
	if at := time.Duration(firedAt.Load()); at < 30*time.Millisecond {
		t.Errorf("fired after %s, before it was due (30ms)", at)
	}
}

// TestDeadlinesRemovedWhileFiring: a deadline removed while its check runs
// is not armed again by that check's answer.
func TestDeadlinesRemovedWhileFiring(t *testing.T) {
	d := testDeadlines(t, 2*time.Millisecond)
	var calls atomic.Int32
	var x *deadline
	inFire := make(chan struct{})
	release := make(chan struct{})
	x = d.add(time.Millisecond, func() time.Duration {
		if calls.Add(1) == 1 {
			close(inFire)
			<-release
		}
		return time.Millisecond // asks to be checked again
	})
	<-inFire
	if d.remove(x) {
		t.Error("remove while firing: true, want false (it has fired)")
	}
	close(release)
	time.Sleep(30 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Errorf("checked %d times, want 1: removed while firing, then armed again", n)
	}
}

// TestDeadlinesGoroutineStops: with nothing to watch the goroutine exits
// after quietTicks ticks, and a new deadline starts it again.
func TestDeadlinesGoroutineStops(t *testing.T) {
	d := testDeadlines(t, time.Millisecond)
	running := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.running
	}
	var fired atomic.Int32
	d.add(time.Millisecond, func() time.Duration { fired.Add(1); return 0 })
	waitFor(t, "the first fired and the goroutine stopped", func() bool { return fired.Load() == 1 && !running() })
	d.add(time.Millisecond, func() time.Duration { fired.Add(1); return 0 })
	waitFor(t, "the second fired", func() bool { return fired.Load() == 2 })
}

// TestDeadlinesWithTimeout: the context is cancelled once its time has
// passed, and timedOut says why; cancelled early, it did not time out.
func TestDeadlinesWithTimeout(t *testing.T) {
	d := testDeadlines(t, 2*time.Millisecond)
	ctx, cancel := d.withTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not cancelled")
	}
	if !timedOut(ctx) {
		t.Errorf("timedOut = false; cause %v", context.Cause(ctx))
	}
	ctx2, cancel2 := d.withTimeout(context.Background(), time.Hour)
	cancel2()
	if ctx2.Err() == nil || timedOut(ctx2) {
		t.Errorf("cancelled early: err %v, timedOut %v", ctx2.Err(), timedOut(ctx2))
	}
	d.mu.Lock()
	n := len(d.items)
	d.mu.Unlock()
	if n != 0 {
		t.Errorf("%d deadlines left armed after cancel", n)
	}
}

// TestDialAndLookupTimeout: an upstream that never answers and a resolver
// that never answers are cut off by DialTimeout, reported as timeouts:
// 504 over HTTP, with the reason saying so.
func TestDialAndLookupTimeout(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	h := newHarness(t, setup{
		allow:  []string{"127.0.0.1:9", "slow.example"},
		limits: Limits{DialTimeout: 100 * time.Millisecond},
		dialer: DialerFunc(func(ctx context.Context, _, _ string) (net.Conn, error) { return nil, hang(ctx) }),
		resolver: resolverFunc(func(ctx context.Context, _, _ string) ([]netip.Addr, error) {
			return nil, hang(ctx)
		}),
	})
	for _, target := range []string{"127.0.0.1:9", "slow.example:443"} {
		start := time.Now()
		resp, _ := connect(t, h.addr, target)
		r := resp.Header.Get(ReasonHeader)
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.HasPrefix(r, reasonFailed) || !strings.Contains(r, "i/o timeout") {
			t.Errorf("%s: status %d reason %q, want 504 and an i/o timeout", target, resp.StatusCode, r)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("%s: refused after %s, before the timeout", target, d)
		}
	}
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}
