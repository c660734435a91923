// Package testutil holds the named skip helpers and guards shared by
// airlock's tests.
package testutil

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
)

// RequireRoot skips the test unless it runs as root. CI runs as root, so
// tests behind it run there for real. The fast tier skips it too: what
// needs root starts sandboxes, namespaces or processes as another user.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (runs for real in CI)")
	}
	SkipShort(t, "needs root")
}

// SkipShort skips the test in the fast tier, go test -short: what needs
// neither root nor the network and runs in a minute (the README's fast
// test command). why says what makes the test slow.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: not in the fast tier (go test -short)", why)
	}
}

// RequireNonRoot skips the test unless it runs as an unprivileged user.
func RequireNonRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("needs an unprivileged user")
	}
}

// LoopbackDialer is a dialer for tests that fails the test on any attempt
// to reach an address outside 127.0.0.0/8 and ::1: tests never send traffic
// off the host.
func LoopbackDialer(t testing.TB) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("test tried to dial non-loopback address %q over %s", addr, network)
			return nil, fmt.Errorf("testutil: refusing non-loopback dial to %q", addr)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// RequireCommands skips the test unless every named program is on PATH.
func RequireCommands(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("needs %s on PATH (CI installs it)", n)
		}
	}
}

// RequirePodman skips the test unless it runs as root with podman and
// runc installed: rootful podman, as .ci/run installs it.
func RequirePodman(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	RequireCommands(t, "podman", "runc", "ip")
}
