package egress

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestHostAddrsFollowChanges: an address added to an interface while the
// gate runs is the host's own within moments, without a restart. It runs
// in a network namespace of its own, where it may add addresses.
func TestHostAddrsFollowChanges(t *testing.T) {
	if !testutil.InNamespaces() {
		testutil.RunTestInNamespaces(t, "TestHostAddrsFollowChanges", unix.CLONE_NEWNET)
		return
	}
	added := netip.MustParseAddr("10.9.8.7")
	if HostAddrs().Contains(added) {
		t.Fatalf("%s is the host's before it was added", added)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo:9")
	if err != nil {
		t.Fatal(err)
	}
	if err := ifr.SetInet4Addr(added.AsSlice()); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFADDR, ifr); err != nil {
		t.Fatalf("add %s to lo: %v", added, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !HostAddrs().Contains(added) {
		if time.Now().After(deadline) {
			t.Fatalf("%s added to lo but not the host's own after 10s", added)
		}
		time.Sleep(time.Millisecond)
	}
	if hostAddrs.poll.Load() {
		t.Error("no rtnetlink subscription: the addresses were read on every call")
	}
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{"t": {"10.0.0.0/8"}}, Local: HostAddrs()})
	if d, _ := g.CheckHost("t", "10.9.8.7", 22); d.Allowed() {
		t.Errorf("the host's new address is allowed: %v", d)
	}
}
