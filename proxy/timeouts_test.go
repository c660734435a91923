package proxy

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

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
