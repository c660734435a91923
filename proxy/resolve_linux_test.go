package proxy

import (
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestResolvesTheDecidedName is finding 12 of issue 11: the proxy dials
// the address of the name it decided, not of what the host's resolver
// makes of it through its search domains. It runs in network and mount
// namespaces of its own, with a resolv.conf that has a search domain and
// ndots:5 and a DNS server on loopback that answers "svc." and
// "svc.search.test." with different addresses; the proxy uses the
// system's resolver, as airlock does (Config.Resolver left nil), and its
// dialer connects each answer to a sink that counts what reaches it.
func TestResolvesTheDecidedName(t *testing.T) {
	if !testutil.InNamespaces() {
		testutil.RunTestInNamespaces(t, "TestResolvesTheDecidedName", unix.CLONE_NEWNET|unix.CLONE_NEWNS)
		return
	}
	upLoopback(t)
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 127.0.0.1\nsearch search.test\noptions ndots:5 attempts:1 timeout:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(conf, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind a resolv.conf of the test's own: %v", err)
	}
	// The decided name's sink at 127.0.0.1, the search-expanded name's at
	// 127.0.0.2: the DNS answers are their stand-ins.
	answers := map[string]netip.Addr{
		"svc.":             netip.MustParseAddr(standIn("127.0.0.1")),
		"svc.search.test.": netip.MustParseAddr(standIn("127.0.0.2")),
	}
	serveDNS(t, answers)
	var decided, expanded atomic.Int32
	sink := func(n *atomic.Int32) func(net.Conn) {
		return func(c net.Conn) { n.Add(1); echo(c) }
	}
	up := serveUpstream(t, "127.0.0.1:0", sink(&decided))
	serveUpstream(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(int(up.port()))), sink(&expanded))

	h := newHarness(t, setup{allow: []string{up.hostPort("svc")}, resolver: net.DefaultResolver})
	for range 5 {
		resp, c := connect(t, h.addr, up.hostPort("svc"))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT svc: %d %s", resp.StatusCode, resp.Header.Get(ReasonHeader))
		}
		exchange(t, c, "hello")
		c.Close()
	}
	if decided.Load() != 5 || expanded.Load() != 0 {
		t.Errorf("the decided name's sink got %d connections, the search-expanded name's %d; want 5 and 0", decided.Load(), expanded.Load())
	}
	for _, ev := range h.events.stage(StageDecided) {
		if len(ev.Resolved) != 1 || ev.Resolved[0] != answers["svc."] {
			t.Errorf("decided event resolved %v, want %v", ev.Resolved, answers["svc."])
		}
	}
}

// upLoopback brings lo up in the test's network namespace.
func upLoopback(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		t.Fatal(err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("bring lo up: %v", err)
	}
}

// serveDNS answers A queries for the names in answers on 127.0.0.1:53,
// over UDP and TCP; every other query gets an empty answer (AAAA) or
// NXDOMAIN.
func serveDNS(t *testing.T, answers map[string]netip.Addr) {
	t.Helper()
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		name := q.Question[0].Name
		a, ok := answers[name]
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Question[0].Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: a.AsSlice()})
		}
		_ = w.WriteMsg(m)
	})
	for _, network := range []string{"udp", "tcp"} {
		started := make(chan struct{})
		srv := &dns.Server{Addr: "127.0.0.1:53", Net: network, Handler: handler, NotifyStartedFunc: func() { close(started) }}
		go func() { _ = srv.ListenAndServe() }()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("DNS server over %s did not start", network)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
}
