package proxy

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// fakeResolver answers from a table and records every lookup. Unknown
// names are "no such host": tests never touch real DNS.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	lookups []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	// The proxy asks for fully qualified names; the table is written
	// without the trailing dot. A name asked for without one is unknown.
	name, fqdn := strings.CutSuffix(host, ".")
	if a, ok := r.answers[name]; ok && fqdn {
		return append([]netip.Addr(nil), a...), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lookups...)
}

// standIn returns the stand-in of a loopback address ("127.0.0.1"), for
// tests that reach a loopback upstream by name (testutil.StandIn).
func standIn(loopback string) string {
	return testutil.StandIn(netip.MustParseAddr(loopback)).String()
}

// dialLog records every address the proxy dials, then dials it (a
// stand-in through to loopback) through testutil.LoopbackDialer, which
// fails the test on anything off loopback.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
	next  Dialer
}

func (d *dialLog) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	return d.next.DialContext(ctx, network, testutil.ThroughStandIn(addr))
}

func (d *dialLog) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// eventLog collects the proxy's events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	change chan struct{}
}

func newEventLog() *eventLog { return &eventLog{change: make(chan struct{}, 1)} }

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
	select {
	case l.change <- struct{}{}:
	default:
	}
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

func (l *eventLog) stage(s Stage) []Event {
	var out []Event
	for _, ev := range l.all() {
		if ev.Stage == s {
			out = append(out, ev)
		}
	}
	return out
}

// wait returns once n events of stage s have been reported.
func (l *eventLog) wait(t testing.TB, s Stage, n int) []Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if evs := l.stage(s); len(evs) >= n {
			return evs
		}
		select {
		case <-l.change:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %d %s events; have %d", n, s, len(l.stage(s)))
		}
	}
}

// harness is a proxy serving on loopback with a fake resolver, a logged
// loopback-only dialer and an event log.
type harness struct {
	p      *Proxy
	addr   string
	res    *fakeResolver
	dials  *dialLog
	events *eventLog
	served chan error
}

type setup struct {
	cfg      *egress.Config // when set, replaces allow and blocked
	task     string
	allow    []string
	blocked  []string
	answers  map[string][]netip.Addr
	limits   Limits
	resolver Resolver     // replaces the fake resolver built from answers
	dialer   Dialer       // replaces the logged loopback dialer's inner dialer
	listener net.Listener // default: tcp 127.0.0.1:0
	noEvents bool         // no event callback (benchmarks)
	ca       *CA          // signs inspected tunnels' certificates
	roots    *x509.CertPool
	creds    []Credential
	budgets  []Budget
	metrics  *Metrics
	record   func(Event) error

	upstream   http.Handler // an inspect harness's upstream, in place of serveTLSUpstream's
	upstreamH1 bool         // the upstream speaks HTTP/1.1 only
}

func newHarness(t testing.TB, s setup) *harness {
	t.Helper()
	if s.task == "" {
		s.task = "t"
	}
	cfg := egress.Config{
		TaskAllowlist: map[string][]string{s.task: s.allow},
		AlwaysBlocked: s.blocked,
	}
	if s.cfg != nil {
		cfg = *s.cfg
	}
	if cfg.Local == nil {
		cfg.Local = egress.FixedAddrs{} // loopback only: no test depends on the host's addresses
	}
	g, err := egress.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessGate(t, s, g)
}

func newHarnessGate(t testing.TB, s setup, g Gate) *harness {
	t.Helper()
	if s.task == "" {
		s.task = "t"
	}
	h := &harness{
		res:    &fakeResolver{answers: s.answers},
		dials:  &dialLog{next: DialerFunc(testutil.LoopbackDialer(t))},
		events: newEventLog(),
		served: make(chan error, 1),
	}
	if s.dialer != nil {
		h.dials.next = s.dialer
	}
	var res Resolver = h.res
	if s.resolver != nil {
		res = s.resolver
	}
	cfg := Config{Task: s.task, Gate: g, Resolver: res, Dialer: h.dials, OnEvent: h.events.add, Limits: s.limits,
		CA: s.ca, UpstreamRoots: s.roots, Credentials: s.creds, Budgets: s.budgets, Metrics: s.metrics, Record: s.record}
	if s.noEvents {
		cfg.OnEvent = nil
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln := s.listener
	if ln == nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
	}
	h.p, h.addr = p, ln.Addr().String()
	go func() { h.served <- p.Serve(ln) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-h.served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return h
}

// upstream is a loopback server for the proxy to reach.
type upstream struct {
	ln   net.Listener
	ap   netip.AddrPort
	wg   sync.WaitGroup
	mu   sync.Mutex
	conn []net.Conn
}

// serveUpstream listens on addr ("127.0.0.1:0", "[::1]:0") and runs handle
// for every connection.
func serveUpstream(t testing.TB, addr string, handle func(net.Conn)) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{ln: ln, ap: ln.Addr().(*net.TCPAddr).AddrPort()}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conn = append(u.conn, c)
			u.mu.Unlock()
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		u.mu.Lock()
		for _, c := range u.conn {
			c.Close()
		}
		u.mu.Unlock()
		u.wg.Wait()
	})
	return u
}

// echo copies a connection back to itself, then half-closes it.
func echo(c net.Conn) {
	_, _ = io.Copy(c, c)
	_ = c.(*net.TCPConn).CloseWrite()
}

func (u *upstream) port() uint16 { return u.ap.Port() }

// hostPort joins a host and the upstream's port.
func (u *upstream) hostPort(host string) string {
	return net.JoinHostPort(host, fmt.Sprint(u.port()))
}

// bufConn is a client connection whose first bytes sit in a reader.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }
func (c *bufConn) CloseWrite() error          { return c.Conn.(*net.TCPConn).CloseWrite() }

// dialProxy connects to the proxy.
func dialProxy(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connect sends CONNECT target through the proxy and returns the
// response and the connection, a tunnel when the status is 200.
func connect(t testing.TB, proxyAddr, target string) (*http.Response, *bufConn) {
	t.Helper()
	c := dialProxy(t, proxyAddr)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	return resp, &bufConn{Conn: c, r: br}
}

// roundTrip sends one raw HTTP request through the proxy and reads the
// response with its body.
func roundTrip(t testing.TB, proxyAddr, raw string) (*http.Response, string) {
	t.Helper()
	c := dialProxy(t, proxyAddr)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, string(body)
}

// socksDial speaks SOCKS5 CONNECT to the proxy with the given address
// type and returns the reply code and the connection.
func socksDial(t testing.TB, proxyAddr string, atyp byte, host string, port uint16) (byte, net.Conn) {
	t.Helper()
	c := dialProxy(t, proxyAddr)
	req := []byte{5, 1, 0, 5, socksConnect, 0, atyp}
	switch atyp {
	case atypDomain:
		req = append(req, byte(len(host)))
		req = append(req, host...)
	default:
		req = append(req, netip.MustParseAddr(host).AsSlice()...)
	}
	req = binary.BigEndian.AppendUint16(req, port)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	return readSOCKSReply(t, c), c
}

// readSOCKSReply reads the method choice and the reply of a request.
func readSOCKSReply(t testing.TB, c net.Conn) byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	var m [2]byte
	if _, err := io.ReadFull(c, m[:]); err != nil || m != [2]byte{5, 0} {
		t.Fatalf("SOCKS5 method choice: %x, %v", m, err)
	}
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatalf("SOCKS5 reply: %v", err)
	}
	n := 4 + 2
	if h[3] == atypIPv6 {
		n = 16 + 2
	}
	if _, err := io.ReadFull(c, make([]byte, n)); err != nil {
		t.Fatalf("SOCKS5 reply address: %v", err)
	}
	return h[1]
}

// exchange writes msg into a tunnel and expects it echoed back.
func exchange(t testing.TB, c net.Conn, msg string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

// wantEOF expects the peer to close the connection within the timeout.
func wantEOF(t testing.TB, c net.Conn, within time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	b := make([]byte, 64)
	for {
		_, err := c.Read(b)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %s", within)
		}
		return
	}
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// serveHTTPUpstream serves handler over HTTP on addr.
func serveHTTPUpstream(t testing.TB, addr string, handler http.HandlerFunc) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return &upstream{ln: ln, ap: ln.Addr().(*net.TCPAddr).AddrPort()}
}

// outcome is what a client saw when it asked the proxy for a host.
type outcome struct {
	allowed bool
	reason  string // the refusal's reason (header, body or decided event)
}

// reach asks the proxy for host on the upstream's port over proto; an
// allowed request must get through to the upstream (an echo for tunnels,
// "hello from HOST:PORT" over HTTP).
func (h *harness) reach(t testing.TB, proto Protocol, host string, up *upstream) outcome {
	t.Helper()
	hostport := up.hostPort(host)
	switch proto {
	case ProtocolHTTP:
		resp, body := roundTrip(t, h.addr, "GET http://"+hostport+"/ HTTP/1.1\r\nHost: "+hostport+"\r\n\r\n")
		switch resp.StatusCode {
		case http.StatusOK:
			if want := "hello from " + hostport; body != want {
				t.Fatalf("body %q, want %q", body, want)
			}
			return outcome{allowed: true}
		case http.StatusForbidden:
			return refusalOutcome(t, resp, body)
		}
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	case ProtocolConnect:
		resp, c := connect(t, h.addr, hostport)
		switch resp.StatusCode {
		case http.StatusOK:
			exchange(t, c, "ping "+host)
			c.Close()
			return outcome{allowed: true}
		case http.StatusForbidden:
			body, _ := io.ReadAll(resp.Body)
			return refusalOutcome(t, resp, string(body))
		}
		t.Fatalf("status %d", resp.StatusCode)
	case ProtocolSOCKS5:
		atyp := byte(atypDomain)
		if a, err := netip.ParseAddr(host); err == nil {
			atyp = atypIPv4
			if a.Is6() {
				atyp = atypIPv6
			}
		}
		rep, c := socksDial(t, h.addr, atyp, host, up.port())
		switch rep {
		case repSucceeded:
			exchange(t, c, "ping "+host)
			c.Close()
			return outcome{allowed: true}
		case repNotAllowed:
			evs := h.events.wait(t, StageDecided, 1)
			return outcome{reason: evs[len(evs)-1].Decision.Reason}
		}
		t.Fatalf("SOCKS5 reply %d", rep)
	}
	panic("unreachable")
}

// refusalOutcome checks that a 403 carries its reason in the header and
// the body alike.
func refusalOutcome(t testing.TB, resp *http.Response, body string) outcome {
	t.Helper()
	reason := resp.Header.Get(ReasonHeader)
	if reason == "" {
		t.Fatalf("403 without %s", ReasonHeader)
	}
	if want := "airlock: " + reason + "\n"; body != want {
		t.Fatalf("403 body %q, want %q", body, want)
	}
	return outcome{reason: reason}
}

func readFull(c net.Conn, b []byte) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	return io.ReadFull(c, b)
}

// echoCheck is exchange for goroutines: it returns an error.
func echoCheck(c net.Conn, msg string) error {
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := readFull(c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("echo %q, want %q", got, msg)
	}
	return nil
}
