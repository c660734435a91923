package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
)

// TestResolvedAddressesChecked resolves allowlisted names, through a fake
// resolver, to metadata, to a mix of loopback and metadata, and (under
// "*") to loopback: each is refused with the gate's reason, after exactly
// one lookup and without any dial.
func TestResolvedAddressesChecked(t *testing.T) {
	cases := []struct {
		name   string
		allow  []string
		answer []netip.Addr
		reason string
	}{
		{"allowlisted name to metadata", []string{"svc.test"}, addrs("169.254.169.254"),
			`is always blocked: it resolves to 169.254.169.254, which matches built-in entry`},
		{"mix of public and metadata", []string{"svc.test"}, addrs("93.184.216.34", "169.254.169.254"),
			`is always blocked: it resolves to 169.254.169.254`},
		{"mapped metadata", []string{"svc.test"}, addrs("::ffff:169.254.169.254"),
			`is always blocked: it resolves to 169.254.169.254`},
		{"NAT64 metadata", []string{"svc.test"}, addrs("93.184.216.34", "64:ff9b::a9fe:a9fe"),
			`is always blocked`},
		{"aws ipv6 metadata", []string{"*.test"}, addrs("fd00:ec2::254"),
			`is always blocked`},
		{"wildcard to loopback", []string{"*"}, addrs("127.0.0.1"),
			`denied: it resolves to 127.0.0.1, this host's own (loopback)`},
		{"exact name to loopback", []string{"svc.test"}, addrs("127.0.0.1", "::1"),
			`denied: it resolves to 127.0.0.1, this host's own (loopback): only an IP or CIDR entry naming the port reaches it, not entry "svc.test"`},
		{"suffix wildcard to private", []string{"*.test"}, addrs("10.0.0.1", "192.168.1.1"),
			`resolves only to non-public addresses`},
	}
	for _, c := range cases {
		for _, proto := range []Protocol{ProtocolHTTP, ProtocolConnect, ProtocolSOCKS5} {
			t.Run(c.name+"/"+string(proto), func(t *testing.T) {
				h := newHarness(t, setup{allow: c.allow, answers: map[string][]netip.Addr{"svc.test": c.answer}})
				up := &upstream{ap: netip.MustParseAddrPort("127.0.0.1:8080")}
				got := h.reach(t, proto, "svc.test", up)
				if got.allowed || !strings.Contains(got.reason, c.reason) {
					t.Fatalf("outcome %+v, want a refusal with %q", got, c.reason)
				}
				if l := h.res.names(); len(l) != 1 || l[0] != "svc.test." {
					t.Errorf("lookups %v, want exactly one of svc.test. (fully qualified)", l)
				}
				if d := h.dials.dialled(); len(d) != 0 {
					t.Errorf("dialled %v", d)
				}
				ev := h.events.wait(t, StageDecided, 1)[0]
				if len(ev.Resolved) != len(c.answer) || ev.Decision.Verdict != decision.Deny {
					t.Errorf("event resolved %v decision %v", ev.Resolved, ev.Decision)
				}
			})
		}
	}
}

// rebindingResolver answers the first lookup of a name with one address
// and every later one with another, as a rebinding attacker's DNS does.
type rebindingResolver struct {
	mu           sync.Mutex
	first, later netip.Addr
	lookups      int
}

func (r *rebindingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups++
	if r.lookups == 1 {
		return []netip.Addr{r.first}, nil
	}
	return []netip.Addr{r.later}, nil
}

// TestRebindingGainsNothing: the name is looked up once, and the address
// dialled is the one that was checked, whatever DNS says afterwards.
func TestRebindingGainsNothing(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	for _, proto := range []Protocol{ProtocolConnect, ProtocolSOCKS5, ProtocolHTTP} {
		t.Run(string(proto), func(t *testing.T) {
			target := up
			if proto == ProtocolHTTP {
				target = serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
					w.Write([]byte("hello from " + r.Host))
				})
			}
			rr := &rebindingResolver{first: netip.MustParseAddr(standIn("127.0.0.1")), later: netip.MustParseAddr("169.254.169.254")}
			h := newHarness(t, setup{allow: []string{"svc.test"}, resolver: rr})
			if got := h.reach(t, proto, "svc.test", target); !got.allowed {
				t.Fatalf("refused: %s", got.reason)
			}
			h.events.wait(t, StageClosed, 1)
			if rr.mu.Lock(); rr.lookups != 1 {
				t.Errorf("%d lookups, want 1", rr.lookups)
			}
			rr.mu.Unlock()
			if d := h.dials.dialled(); len(d) != 1 || d[0] != target.hostPort(standIn("127.0.0.1")) {
				t.Errorf("dialled %v", d)
			}
		})
	}
}

// TestDialsCheckedAddressesInOrder: a name with two allowed addresses is
// dialled address by address (the first refuses), never by name.
func TestDialsCheckedAddressesInOrder(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{"svc.test"}, answers: map[string][]netip.Addr{"svc.test": addrs(standIn("127.0.0.2"), standIn("127.0.0.1"))}})
	// Nothing listens on 127.0.0.2 at the upstream's port.
	resp, c := connect(t, h.addr, up.hostPort("svc.test"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	exchange(t, c, "x")
	c.Close()
	want := []string{up.hostPort(standIn("127.0.0.2")), up.hostPort(standIn("127.0.0.1"))}
	if d := h.dials.dialled(); len(d) != 2 || d[0] != want[0] || d[1] != want[1] {
		t.Errorf("dialled %v, want %v", d, want)
	}
	if ev := h.events.wait(t, StageClosed, 1)[0]; ev.Dialled.String() != want[1] {
		t.Errorf("event dialled %v", ev.Dialled)
	}
}

// refusingDialer records dials and connects nowhere: for the tests whose
// checked address is public, which a test must never reach.
type refusingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *refusingDialer) DialContext(_ context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, addr)
	return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
}

// TestWildcardDropsNonPublic: under "*", a name answering a public and a
// loopback address is dialled at the public one only. The dialer here
// connects nowhere (a public address must not be reached from a test), so
// the client sees the honest upstream failure.
func TestWildcardDropsNonPublic(t *testing.T) {
	rd := &refusingDialer{}
	h := newHarness(t, setup{allow: []string{"*"}, dialer: rd,
		answers: map[string][]netip.Addr{"svc.test": addrs("127.0.0.1", "192.0.2.1", "8.8.8.8")}})
	resp, _ := connect(t, h.addr, "svc.test:443")
	reason := resp.Header.Get(ReasonHeader)
	if resp.StatusCode != http.StatusBadGateway || !strings.HasPrefix(reason, "allowed by the egress gate; the connection then failed: ") ||
		!strings.Contains(reason, "connection refused") {
		t.Fatalf("status %d reason %q", resp.StatusCode, reason)
	}
	if len(rd.addrs) != 1 || rd.addrs[0] != "8.8.8.8:443" {
		t.Errorf("dialled %v, want only the public address", rd.addrs)
	}
	evs := h.events.all()
	if len(evs) != 2 || !evs[0].Decision.Allowed() || !strings.Contains(evs[0].Decision.Reason, "2 of 3 resolved addresses dropped") ||
		evs[1].Stage != StageClosed || !errors.Is(evs[1].Err, syscall.ECONNREFUSED) {
		t.Errorf("events %+v", evs)
	}
}

// TestSpecialUseUnderWildcard: under "*", localhost and the other
// special-use names are refused by the gate (403 with the reason, SOCKS5
// reply 2) and never looked up, where localhost was allowed and then
// failed to resolve (502).
func TestSpecialUseUnderWildcard(t *testing.T) {
	h := newHarness(t, setup{allow: []string{"*"}, answers: map[string][]netip.Addr{"localhost": addrs("127.0.0.1")}})
	for _, host := range []string{"localhost", "db.localhost", "x.invalid", "abcdefghij.onion"} {
		resp, _ := connect(t, h.addr, host+":443")
		if why := resp.Header.Get(ReasonHeader); resp.StatusCode != http.StatusForbidden || !strings.Contains(why, "denied, whatever the allowlist") {
			t.Errorf("CONNECT %s: %d %q", host, resp.StatusCode, why)
		}
		if rep, _ := socksDial(t, h.addr, atypDomain, host, 443); rep != repNotAllowed {
			t.Errorf("SOCKS5 %s: reply %d", host, rep)
		}
	}
	if names := h.res.names(); len(names) != 0 {
		t.Errorf("looked up %q", names)
	}
}

// TestUpstreamFailures: a name that does not resolve and a port where
// nothing listens fail honestly: 502 or SOCKS5 replies 4 and 5.
func TestUpstreamFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := uint16(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	h := newHarness(t, setup{allow: []string{"svc.test", "gone.test"}, answers: map[string][]netip.Addr{"svc.test": addrs(standIn("127.0.0.1"))}})
	cases := []struct {
		host   string
		status int
		rep    byte
		reason string
	}{
		{"gone.test", http.StatusBadGateway, repHostUnreachable, "resolving gone.test: lookup gone.test.: no such host"},
		{"svc.test", http.StatusBadGateway, repConnectionRefused, "connection refused"},
	}
	for _, c := range cases {
		target := net.JoinHostPort(c.host, strings.TrimPrefix(netip.AddrPortFrom(netip.IPv4Unspecified(), closedPort).String(), "0.0.0.0:"))
		resp, _ := connect(t, h.addr, target)
		reason := resp.Header.Get(ReasonHeader)
		if resp.StatusCode != c.status || !strings.HasPrefix(reason, reasonFailed) || !strings.Contains(reason, c.reason) {
			t.Errorf("CONNECT %s: status %d reason %q", target, resp.StatusCode, reason)
		}
		resp, body := roundTrip(t, h.addr, "GET http://"+target+"/ HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != c.status || !strings.Contains(body, c.reason) {
			t.Errorf("GET %s: status %d body %q", target, resp.StatusCode, body)
		}
		if rep, _ := socksDial(t, h.addr, atypDomain, c.host, closedPort); rep != c.rep {
			t.Errorf("SOCKS5 %s: reply %d, want %d", target, rep, c.rep)
		}
	}
	// Each of the six is an allowed request that failed (Event.Failed),
	// recorded as egress_failed.
	for _, ev := range h.events.wait(t, StageClosed, 6) {
		if a := AuditEvent(ev, audit.Context{}); !ev.Failed() || a.Context.Event != audit.EventEgressFailed {
			t.Errorf("%s %s: Failed %v, event %q: %v", ev.Protocol, ev.Target, ev.Failed(), a.Context.Event, ev.Err)
		}
	}
}

// allowNoAddress is a broken gate that allows a name but returns no
// address to dial: the proxy must refuse rather than fall back to the name.
type allowNoAddress struct{ *egress.Gate }

func (g allowNoAddress) CheckResolved(string, egress.Target, []netip.Addr) (decision.Decision, []netip.Addr) {
	return decision.Decision{Gate: decision.GateEgress, Verdict: decision.Allow, Reason: "broken"}, nil
}

// TestFailsClosedOnGateWithoutAddresses covers that fail-closed path.
func TestFailsClosedOnGateWithoutAddresses(t *testing.T) {
	g, err := egress.Compile(egress.Config{TaskAllowlist: map[string][]string{"t": {"svc.test"}}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessGate(t, setup{answers: map[string][]netip.Addr{"svc.test": addrs("127.0.0.1")}}, allowNoAddress{g})
	resp, _ := connect(t, h.addr, "svc.test:443")
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != http.StatusForbidden || !strings.Contains(r, "no checked address remained") {
		t.Fatalf("status %d reason %q", resp.StatusCode, r)
	}
	if d := h.dials.dialled(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
}
