package egress

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

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

// TestHostAddrsLocalRoutes: a prefix routed to the host itself ("AnyIP",
// ip route add local 203.0.113.0/24 dev lo), whose addresses are no
// interface's, is the host's own as soon as it is routed: the host
// accepts connections on every address of it, so a name or a portless
// entry must not reach them. It runs in a network namespace of its own.
func TestHostAddrsLocalRoutes(t *testing.T) {
	if !testutil.InNamespaces() {
		testutil.RunTestInNamespaces(t, "TestHostAddrsLocalRoutes", unix.CLONE_NEWNET)
		return
	}
	in := netip.MustParseAddr("203.0.113.7")
	if HostAddrs().Contains(in) {
		t.Fatalf("%s is the host's before it was routed", in)
	}
	addLocalRoute(t, netip.MustParsePrefix("203.0.113.0/24"))
	deadline := time.Now().Add(10 * time.Second)
	for !HostAddrs().Contains(in) {
		if time.Now().After(deadline) {
			t.Fatalf("%s routed locally but not the host's own after 10s", in)
		}
		time.Sleep(time.Millisecond)
	}
	if HostAddrs().Contains(netip.MustParseAddr("203.0.114.1")) {
		t.Error("an address beside the local route is the host's")
	}
	g := mustCompile(t, Config{TaskAllowlist: map[string][]string{"t": {"203.0.113.0/24", "svc.test"}}, Local: HostAddrs()})
	if d, _ := g.CheckHost("t", in.String(), 22); d.Allowed() {
		t.Errorf("a portless entry reaches the host through its local route: %v", d)
	}
	tg, _ := SplitHostPort("svc.test:443", 0)
	if d, addrs := g.CheckResolved("t", tg, []netip.Addr{in}); d.Allowed() || len(addrs) != 0 {
		t.Errorf("a name reaches the host through its local route: %v %v", d, addrs)
	}
}

// addLocalRoute adds "local p dev lo" to the local table, over rtnetlink.
func addLocalRoute(t *testing.T, p netip.Prefix) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dst := p.Addr().AsSlice()
	attr := func(typ uint16, v []byte) []byte {
		b := make([]byte, unix.SizeofRtAttr, unix.SizeofRtAttr+len(v)+3)
		*(*unix.RtAttr)(unsafe.Pointer(&b[0])) = unix.RtAttr{Len: uint16(unix.SizeofRtAttr + len(v)), Type: typ}
		return append(append(b, v...), make([]byte, (4-len(v)%4)%4)...)
	}
	rt := make([]byte, unix.SizeofRtMsg)
	*(*unix.RtMsg)(unsafe.Pointer(&rt[0])) = unix.RtMsg{Family: unix.AF_INET, Dst_len: uint8(p.Bits()), Table: unix.RT_TABLE_LOCAL,
		Protocol: unix.RTPROT_BOOT, Scope: unix.RT_SCOPE_HOST, Type: unix.RTN_LOCAL}
	body := append(rt, attr(unix.RTA_DST, dst)...)
	body = append(body, attr(unix.RTA_OIF, []byte{1, 0, 0, 0})...) // lo
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	*(*unix.NlMsghdr)(unsafe.Pointer(&msg[0])) = unix.NlMsghdr{Len: uint32(unix.SizeofNlMsghdr + len(body)), Type: unix.RTM_NEWROUTE,
		Flags: unix.NLM_F_REQUEST | unix.NLM_F_CREATE | unix.NLM_F_EXCL | unix.NLM_F_ACK, Seq: 1}
	if err := unix.Sendto(fd, append(msg, body...), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil || n < unix.SizeofNlMsghdr+4 {
		t.Fatalf("route ack: %d %v", n, err)
	}
	if e := *(*int32)(unsafe.Pointer(&buf[unix.SizeofNlMsghdr])); e != 0 {
		t.Fatalf("add local route %s: %v", p, unix.Errno(-e))
	}
}
