package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
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

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	dto "github.com/prometheus/client_model/go"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// gatewayLab is a gateway of two clients on loopback: sandbox-a of task
// alpha (which may reach alpha.test) and sandbox-b of task beta (which may
// reach beta.test), each name a stand-in for its own loopback upstream.
type gatewayLab struct {
	g               *Gateway
	addr            string
	events          *eventLog
	metrics         *Metrics
	tokenA, tokenB  string
	alphaUp, betaUp *upstream // echo
	alphaWeb        *upstream // HTTP, records what it was sent
	received        *bytes.Buffer
	receivedMu      *sync.Mutex
	expiredToken    string
}

func mustToken(t testing.TB) (string, [32]byte) {
	t.Helper()
	tok, _, err := MintToken()
	if err != nil {
		t.Fatal(err)
	}
	return tok, sha256.Sum256([]byte(tok))
}

func newGatewayLab(t testing.TB) *gatewayLab {
	t.Helper()
	l := &gatewayLab{events: newEventLog(), metrics: NewMetrics(), received: &bytes.Buffer{}, receivedMu: &sync.Mutex{}}
	l.alphaUp = serveUpstream(t, "127.0.0.1:0", echo)
	l.betaUp = serveUpstream(t, "127.0.0.2:0", echo)
	l.alphaWeb = serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_ = r.Write(&b)
		l.receivedMu.Lock()
		l.received.Write(b.Bytes())
		l.receivedMu.Unlock()
		io.WriteString(w, "hello from "+r.Host)
	})
	gate, err := egress.Compile(egress.Config{
		TaskAllowlist: map[string][]string{
			"alpha": {"alpha.test"},
			"beta":  {"beta.test"},
		},
		Local: egress.FixedAddrs{},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := &fakeResolver{answers: map[string][]netip.Addr{
		"alpha.test": addrs(standIn("127.0.0.1")),
		"beta.test":  addrs(standIn("127.0.0.2")),
	}}
	var sumA, sumB, sumX [32]byte
	l.tokenA, sumA = mustToken(t)
	l.tokenB, sumB = mustToken(t)
	l.expiredToken, sumX = mustToken(t)
	clients := []Client{
		{Name: "sandbox-a", Task: "alpha", TokenSHA256: sumA},
		{Name: "sandbox-b", Task: "beta", TokenSHA256: sumB},
		{Name: "sandbox-old", Task: "alpha", TokenSHA256: sumX, Expires: time.Now().Add(-time.Minute)},
	}
	dials := &dialLog{next: DialerFunc(testutil.LoopbackDialer(t))}
	l.g, err = NewGateway(GatewayConfig{
		Clients: clients,
		Proxy: func(c Client) (Config, error) {
			return Config{Task: c.Task, Gate: gate, Resolver: res, Dialer: dials, OnEvent: l.events.add, Metrics: l.metrics}, nil
		},
		OnEvent: l.events.add,
		Metrics: l.metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.addr = ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- l.g.Serve(ln) }()
	t.Cleanup(func() {
		l.g.Close()
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return l
}

// basic is the Proxy-Authorization of name and token.
func basic(name, token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+token))
}

// connectAuth sends CONNECT target with the given Proxy-Authorization
// lines (none when empty) and returns the response and the connection.
func connectAuth(t testing.TB, addr, target string, auth ...string) (*http.Response, *bufConn) {
	t.Helper()
	c := dialProxy(t, addr)
	var h strings.Builder
	for _, a := range auth {
		fmt.Fprintf(&h, "Proxy-Authorization: %s\r\n", a)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, h.String())
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, &bufConn{Conn: c, r: br}
}

// socksAuth greets with methods, authenticates with name and token when
// the proxy chooses username/password, and returns the method chosen, the
// authentication status (0xff when none was asked) and the connection.
func socksAuth(t testing.TB, addr string, methods []byte, name, token string) (byte, byte, net.Conn) {
	t.Helper()
	c := dialProxy(t, addr)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	c.Write(append([]byte{5, byte(len(methods))}, methods...))
	var m [2]byte
	if _, err := io.ReadFull(c, m[:]); err != nil {
		t.Fatalf("SOCKS5 method choice: %v", err)
	}
	if m[1] != socksUserPass {
		return m[1], 0xff, c
	}
	msg := append([]byte{1, byte(len(name))}, name...)
	msg = append(append(msg, byte(len(token))), token...)
	c.Write(msg)
	var st [2]byte
	if _, err := io.ReadFull(c, st[:]); err != nil {
		t.Fatalf("SOCKS5 authentication status: %v", err)
	}
	return m[1], st[1], c
}

// socksConnectOn sends a CONNECT for host:port on an authenticated SOCKS5
// connection and returns the reply code.
func socksConnectOn(t testing.TB, c net.Conn, host string, port uint16) byte {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	req := append([]byte{5, socksConnect, 0, atypDomain, byte(len(host))}, host...)
	c.Write(append(req, byte(port>>8), byte(port)))
	var h [10]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatalf("SOCKS5 reply: %v", err)
	}
	return h[1]
}

// TestGatewayBindsClientsToTheirTask: two clients of different tasks at
// one gateway each reach their own task's destination and nothing of the
// other's, over CONNECT, absolute-form HTTP and SOCKS5.
func TestGatewayBindsClientsToTheirTask(t *testing.T) {
	l := newGatewayLab(t)
	alpha, beta := l.alphaUp.hostPort("alpha.test"), l.betaUp.hostPort("beta.test")
	for _, c := range []struct {
		name, token, target string
		want                int
	}{
		{"sandbox-a", l.tokenA, alpha, 200},
		{"sandbox-a", l.tokenA, l.betaUp.hostPort("beta.test"), 403},
		{"sandbox-b", l.tokenB, beta, 200},
		{"sandbox-b", l.tokenB, l.alphaUp.hostPort("alpha.test"), 403},
	} {
		resp, conn := connectAuth(t, l.addr, c.target, basic(c.name, c.token))
		if resp.StatusCode != c.want {
			t.Fatalf("%s CONNECT %s: %d, want %d", c.name, c.target, resp.StatusCode, c.want)
		}
		if c.want == 200 {
			exchange(t, conn, "ping from "+c.name)
		}
		conn.Close()
	}
	// SOCKS5, username/password.
	for _, c := range []struct {
		name, token, host string
		port              uint16
		want              byte
	}{
		{"sandbox-a", l.tokenA, "alpha.test", l.alphaUp.port(), repSucceeded},
		{"sandbox-a", l.tokenA, "beta.test", l.betaUp.port(), repNotAllowed},
		{"sandbox-b", l.tokenB, "beta.test", l.betaUp.port(), repSucceeded},
	} {
		m, st, conn := socksAuth(t, l.addr, []byte{socksNoAuth, socksUserPass}, c.name, c.token)
		if m != socksUserPass || st != 0 {
			t.Fatalf("%s: SOCKS5 method %d, status %d", c.name, m, st)
		}
		if rep := socksConnectOn(t, conn, c.host, c.port); rep != c.want {
			t.Fatalf("%s SOCKS5 %s: reply %d, want %d", c.name, c.host, rep, c.want)
		}
		if c.want == repSucceeded {
			exchange(t, conn, "socks ping from "+c.name)
		}
		conn.Close()
	}
	// Every decision names its client and task, and the task is the
	// client's.
	for _, ev := range l.events.wait(t, StageDecided, 7) {
		want := map[string]string{"sandbox-a": "alpha", "sandbox-b": "beta"}[ev.Identity]
		if want == "" || ev.Task != want {
			t.Errorf("decision of identity %q in task %q: %s", ev.Identity, ev.Task, ev.Decision)
		}
	}
}

// TestGatewayRefusesForgery: every way of not being a client, or of
// being another, is refused before any decision (407, SOCKS5
// authentication failure), recorded as a refusal, and never reaches an
// allowlist.
func TestGatewayRefusesForgery(t *testing.T) {
	l := newGatewayLab(t)
	alpha := l.alphaUp.hostPort("alpha.test")
	stdB64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	forged := map[string][]string{
		"no token":                        nil,
		"empty":                           {""},
		"b's token under a's name":        {basic("sandbox-a", l.tokenB)},
		"a's token, name upper-cased":     {basic("SANDBOX-A", l.tokenA)},
		"a's token upper-cased":           {basic("sandbox-a", strings.ToUpper(l.tokenA))},
		"a's token, unpadded base64":      {"Basic " + strings.TrimRight(stdB64("sandbox-a:"+l.tokenA+"x"), "=")},
		"a's token, URL-safe base64":      {"Basic " + base64.URLEncoding.EncodeToString([]byte("sandbox-a:"+l.tokenA+"?>?"))},
		"a's token, no name":              {"Basic " + stdB64(l.tokenA)},
		"a's token as the name":           {basic(l.tokenA, "x")},
		"a's token, bearer":               {"Bearer " + l.tokenA},
		"a's token twice, one wrong":      {basic("sandbox-a", l.tokenA), basic("sandbox-b", l.tokenA)},
		"a's token twice":                 {basic("sandbox-a", l.tokenA), basic("sandbox-a", l.tokenA)},
		"a's token, trailing data":        {basic("sandbox-a", l.tokenA+"\x00")},
		"expired token":                   {basic("sandbox-old", l.expiredToken)},
		"expired token under a live name": {basic("sandbox-a", l.expiredToken)},
	}
	for what, auth := range forged {
		resp, conn := connectAuth(t, l.addr, alpha, auth...)
		if resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get("Proxy-Authenticate") != `Basic realm="airlock"` {
			t.Errorf("%s: CONNECT answered %d (%q)", what, resp.StatusCode, resp.Header.Get("Proxy-Authenticate"))
		}
		conn.Close()
	}
	// The token in the request target's userinfo, over absolute-form HTTP
	// and CONNECT, without a Proxy-Authorization: not authenticated.
	web := l.alphaWeb.hostPort("alpha.test")
	resp, body := roundTrip(t, l.addr, "GET http://sandbox-a:"+l.tokenA+"@"+web+"/ HTTP/1.1\r\nHost: "+web+"\r\n\r\n")
	if resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("token in the URL: %d %s", resp.StatusCode, body)
	}
	resp, conn := connectAuth(t, l.addr, "sandbox-a:"+l.tokenA+"@"+alpha)
	if resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("token in the CONNECT target: %d", resp.StatusCode)
	}
	conn.Close()
	// And with a valid Proxy-Authorization too: refused for the userinfo.
	resp, body = roundTrip(t, l.addr, "GET http://sandbox-a:"+l.tokenA+"@"+web+"/ HTTP/1.1\r\nHost: "+web+"\r\nProxy-Authorization: "+basic("sandbox-a", l.tokenA)+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("token in the URL, authenticated: %d %s", resp.StatusCode, body)
	}
	resp, conn = connectAuth(t, l.addr, "sandbox-a:"+l.tokenA+"@"+alpha, basic("sandbox-a", l.tokenA))
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("token in the CONNECT target, authenticated: %d", resp.StatusCode)
	}
	conn.Close()
	// SOCKS5: no username/password offered, a wrong token, another's.
	if m, _, conn := socksAuth(t, l.addr, []byte{socksNoAuth}, "", ""); m != socksNoAcceptable {
		t.Errorf("SOCKS5 without username/password: method %d", m)
	} else {
		wantEOF(t, conn, 5*time.Second)
	}
	for _, c := range [][2]string{{"sandbox-a", l.tokenB}, {"sandbox-b", l.tokenA}, {"Sandbox-a", l.tokenA}, {"sandbox-a", ""}, {"sandbox-old", l.expiredToken}} {
		m, st, conn := socksAuth(t, l.addr, []byte{socksUserPass}, c[0], c[1])
		if m != socksUserPass || st == 0 {
			t.Errorf("SOCKS5 as %q: method %d, status %d", c[0], m, st)
		}
		wantEOF(t, conn, 5*time.Second)
	}
	// A malformed RFC 1929 request (version 5).
	c := dialProxy(t, l.addr)
	c.Write([]byte{5, 1, socksUserPass, 5, 1, 'a', 1, 'b'})
	var got [4]byte
	if _, err := readFull(c, got[:]); err != nil || got != [4]byte{5, socksUserPass, 1, 1} {
		t.Errorf("malformed username/password request answered % x, %v", got, err)
	}

	// Nothing was decided, nothing dialled, every refusal recorded.
	n := len(forged) + 2 + 1 + 5 + 1
	var rejected []Event
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rejected = l.events.stage(StageRejected)
		if total := countOf(rejected); total >= n || time.Now().After(deadline) {
			break
		}
	}
	for _, ev := range l.events.stage(StageDecided) {
		if ev.Identity != "sandbox-a" || !strings.Contains(ev.Decision.Reason, "user credentials") {
			t.Errorf("a forged request reached a decision: %+v", ev)
		}
	}
	for _, ev := range rejected {
		if !strings.Contains(ev.Decision.Reason, "proxy authentication refused") {
			t.Errorf("refusal %q", ev.Decision.Reason)
		}
		if ev.Identity != "" || ev.Task != "" {
			t.Errorf("a refusal before authentication names identity %q, task %q", ev.Identity, ev.Task)
		}
	}
	if total := countOf(rejected); total != n {
		t.Errorf("%d refusals recorded, want %d", total, n)
	}
	noTokenIn(t, l.events.all(), l.tokenA, l.tokenB, l.expiredToken)
}

// countOf is how many refusals the events stand for (coalesced ones
// count as many).
func countOf(evs []Event) (n int) {
	for _, ev := range evs {
		n += ev.Count
	}
	return n
}

// noTokenIn fails when any event shows a token.
func noTokenIn(t *testing.T, evs []Event, tokens ...string) {
	t.Helper()
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		a, _ := json.Marshal(AuditEvent(ev, audit.Context{}))
		for _, tok := range tokens {
			if bytes.Contains(b, []byte(tok)) || bytes.Contains(a, []byte(tok)) {
				t.Errorf("an event shows a token: %s", b)
			}
		}
	}
}

// TestGatewayStripsTheToken: a forwarded request reaches its destination
// without Proxy-Authorization and without the token anywhere in it.
func TestGatewayStripsTheToken(t *testing.T) {
	l := newGatewayLab(t)
	web := l.alphaWeb.hostPort("alpha.test")
	resp, body := roundTrip(t, l.addr, "GET http://"+web+"/x HTTP/1.1\r\nHost: "+web+"\r\nProxy-Authorization: "+basic("sandbox-a", l.tokenA)+"\r\n\r\n")
	if resp.StatusCode != 200 || body != "hello from "+web {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	l.receivedMu.Lock()
	got := l.received.String()
	l.receivedMu.Unlock()
	if strings.Contains(strings.ToLower(got), "proxy-authorization") || strings.Contains(got, l.tokenA) || strings.Contains(got, base64.StdEncoding.EncodeToString([]byte("sandbox-a:"+l.tokenA))) {
		t.Errorf("the destination was sent the token:\n%s", got)
	}
}

// TestGatewayConnectionIsOneClients: on a keep-alive connection, a
// request naming another client than the first is refused.
func TestGatewayConnectionIsOneClients(t *testing.T) {
	l := newGatewayLab(t)
	web := l.alphaWeb.hostPort("alpha.test")
	c := dialProxy(t, l.addr)
	br := bufio.NewReader(c)
	send := func(name, token string) int {
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: %s\r\n\r\n", web, web, basic(name, token))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("sandbox-a", l.tokenA); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if code := send("sandbox-b", l.tokenB); code != http.StatusProxyAuthRequired {
		t.Errorf("second request, as another client: %d", code)
	}
	evs := l.events.wait(t, StageRejected, 1)
	if !strings.Contains(evs[0].Decision.Reason, `the connection is client "sandbox-a"'s`) {
		t.Errorf("refusal %q", evs[0].Decision.Reason)
	}
}

// TestGatewayMetrics: the metrics, parsed by Prometheus's own parser,
// count what was sent: decisions by task, client and verdict, bytes each
// way, upstream connections, and a latency observation per decision and
// per dial.
func TestGatewayMetrics(t *testing.T) {
	l := newGatewayLab(t)
	alpha := l.alphaUp.hostPort("alpha.test")
	msg := "twelve bytes"
	for range 3 {
		resp, c := connectAuth(t, l.addr, alpha, basic("sandbox-a", l.tokenA))
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		exchange(t, c, msg)
		c.Close()
	}
	resp, c := connectAuth(t, l.addr, l.betaUp.hostPort("beta.test"), basic("sandbox-a", l.tokenA))
	if resp.StatusCode != 403 {
		t.Fatal(resp.Status)
	}
	c.Close()
	resp, c = connectAuth(t, l.addr, alpha, basic("sandbox-b", l.tokenA))
	if resp.StatusCode != 407 {
		t.Fatal(resp.Status)
	}
	c.Close()
	l.events.wait(t, StageClosed, 3)
	l.events.wait(t, StageRejected, 1)

	var text bytes.Buffer
	if err := l.metrics.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text.Bytes()))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, text.String())
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no family %s in\n%s", name, text.String())
		}
	next:
		for _, m := range f.Metric {
			got := map[string]string{}
			for _, lp := range m.Label {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.Counter.GetValue()
			case dto.MetricType_GAUGE:
				return m.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("no %s%v in\n%s", name, labels, text.String())
		return 0
	}
	a := map[string]string{"task": "alpha", "client": "sandbox-a"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range a {
			m[k] = v
		}
		return m
	}
	for name, want := range map[string]float64{
		"airlock_proxy_decisions_total verdict=allow":    3,
		"airlock_proxy_decisions_total verdict=deny":     1,
		"airlock_proxy_bytes_total direction=up":         3 * float64(len(msg)),
		"airlock_proxy_bytes_total direction=down":       3 * float64(len(msg)),
		"airlock_proxy_upstream_total":                   3,
		"airlock_proxy_upstream_open":                    0,
		"airlock_proxy_decision_seconds":                 4,
		"airlock_proxy_dial_seconds":                     3,
		"airlock_proxy_client_connections_total (front)": 5,
	} {
		fam, label, _ := strings.Cut(name, " ")
		var got float64
		switch {
		case label == "(front)":
			got = value(fam, nil)
		case label == "":
			got = value(fam, a)
		default:
			k, v, _ := strings.Cut(label, "=")
			got = value(fam, with(k, v))
		}
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value("airlock_proxy_decisions_total", map[string]string{"task": "", "client": "", "verdict": "rejected"}); got != 1 {
		t.Errorf("rejected before authentication: %v, want 1", got)
	}
}

// TestGatewayConfigRefused: a gateway's clients must be well named,
// unique, and hold distinct tokens; a client's proxy must be of its task.
func TestGatewayConfigRefused(t *testing.T) {
	gate, err := egress.Compile(egress.Config{TaskAllowlist: map[string][]string{"alpha": {"alpha.test"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, sum := mustToken(t)
	_, sum2 := mustToken(t)
	ok := func(c Client) (Config, error) { return Config{Task: c.Task, Gate: gate}, nil }
	for what, cfg := range map[string]GatewayConfig{
		"no clients":      {Proxy: ok},
		"a bad name":      {Proxy: ok, Clients: []Client{{Name: "a:b", Task: "alpha", TokenSHA256: sum}}},
		"a name twice":    {Proxy: ok, Clients: []Client{{Name: "a", Task: "alpha", TokenSHA256: sum}, {Name: "a", Task: "alpha", TokenSHA256: sum2}}},
		"a token twice":   {Proxy: ok, Clients: []Client{{Name: "a", Task: "alpha", TokenSHA256: sum}, {Name: "b", Task: "alpha", TokenSHA256: sum}}},
		"no token":        {Proxy: ok, Clients: []Client{{Name: "a", Task: "alpha"}}},
		"no Proxy":        {Clients: []Client{{Name: "a", Task: "alpha", TokenSHA256: sum}}},
		"another's proxy": {Proxy: func(Client) (Config, error) { return Config{Task: "beta", Gate: gate}, nil }, Clients: []Client{{Name: "a", Task: "alpha", TokenSHA256: sum}}},
	} {
		if g, err := NewGateway(cfg); err == nil {
			g.Close()
			t.Errorf("%s: accepted", what)
		}
	}
}

// TestGatewayBoundsPerIdentity: two clients of the same task each have
// their own budgets and tunnel bound: one reaching its cap leaves the
// other served.
func TestGatewayBoundsPerIdentity(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	gate, err := egress.Compile(egress.Config{TaskAllowlist: map[string][]string{"alpha": {"alpha.test"}}, Local: egress.FixedAddrs{}})
	if err != nil {
		t.Fatal(err)
	}
	res := &fakeResolver{answers: map[string][]netip.Addr{"alpha.test": addrs(standIn("127.0.0.1"))}}
	tokA, sumA := mustToken(t)
	tokB, sumB := mustToken(t)
	events := newEventLog()
	g, err := NewGateway(GatewayConfig{
		Clients: []Client{{Name: "a", Task: "alpha", TokenSHA256: sumA}, {Name: "b", Task: "alpha", TokenSHA256: sumB}},
		Proxy: func(c Client) (Config, error) {
			return Config{Task: c.Task, Gate: gate, Resolver: res, Dialer: &dialLog{next: DialerFunc(testutil.LoopbackDialer(t))},
				OnEvent: events.add, Limits: Limits{MaxTunnels: 2},
				Budgets: []Budget{{Name: "task alpha", All: BudgetLimits{Connections: 5}}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(func() { g.Close() })
	target := up.hostPort("alpha.test")
	open := func(name, token string) (int, *bufConn) {
		resp, c := connectAuth(t, ln.Addr().String(), target, basic(name, token))
		if resp.StatusCode == 200 {
			exchange(t, c, "ping")
		}
		return resp.StatusCode, c
	}
	// a holds its two tunnels: a third is refused, b is served.
	_, a1 := open("a", tokA)
	_, a2 := open("a", tokA)
	if code, _ := open("a", tokA); code != http.StatusServiceUnavailable {
		t.Errorf("a's third tunnel: %d, want 503", code)
	}
	if code, c := open("b", tokB); code != 200 {
		t.Errorf("b beside a's full share: %d", code)
	} else {
		c.Close()
	}
	a1.Close()
	a2.Close()
	// Four ends: a's refused third (allowed, then no slot: reported
	// closed with its error), b's, a1's and a2's. Waiting for three let
	// a2's slot still be held.
	events.wait(t, StageClosed, 4)
	// a spends its budget of connections; b's is its own.
	spent := false
	for range 5 {
		code, c := open("a", tokA)
		c.Close()
		if spent = code == http.StatusTooManyRequests; spent {
			break
		}
		if code != 200 {
			t.Fatalf("a: %d", code)
		}
	}
	if !spent {
		t.Fatal("a's budget of 5 connections was never reached")
	}
	if code, c := open("b", tokB); code != 200 {
		t.Errorf("b beside a's spent budget: %d", code)
	} else {
		c.Close()
	}
}

// TestMetricsUnrecordedInspectedRequest: an inspected request whose
// allowed decision cannot be recorded is refused, and reported ended, so
// that the open upstream gauge comes back to zero.
func TestMetricsUnrecordedInspectedRequest(t *testing.T) {
	m := NewMetrics()
	ih := newInspectHarness(t, nil, func(s *setup) {
		s.metrics = m
		s.record = func(ev Event) error {
			if ev.Protocol == ProtocolInspected && ev.Stage == StageDecided {
				return errors.New("disk full")
			}
			return nil
		}
	})
	if resp, _ := ih.do(t, "GET", "/x", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	ih.client.CloseIdleConnections()
	ih.events.wait(t, StageClosed, 2) // the request's, then the tunnel's
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.upOpen[metricKey{task: "t"}]; n != 0 {
		t.Errorf("upstream open: %v, want 0", n)
	}
}

// TestGatewayShutdownAndClose: Shutdown waits for the clients' open
// tunnels (ending with its context), and Close cuts them and returns,
// though the front's goroutines run the clients' tunnels.
func TestGatewayShutdownAndClose(t *testing.T) {
	l := newGatewayLab(t)
	resp, c1 := connectAuth(t, l.addr, l.alphaUp.hostPort("alpha.test"), basic("sandbox-a", l.tokenA))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	exchange(t, c1, "held")
	_, st, c2 := socksAuth(t, l.addr, []byte{socksUserPass}, "sandbox-b", l.tokenB)
	if st != 0 || socksConnectOn(t, c2, "beta.test", l.betaUp.port()) != repSucceeded {
		t.Fatal("SOCKS5 tunnel refused")
	}
	exchange(t, c2, "held too")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := l.g.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with tunnels open: %v", err)
	}
	exchange(t, c1, "still open") // Shutdown cut nothing open
	closed := make(chan error, 1)
	go func() { closed <- l.g.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	wantEOF(t, c1, 5*time.Second)
	wantEOF(t, c2, 5*time.Second)
}

// TestGatewayConnectionsPerIdentity: two clients from one address each
// hold at most their own connections once authenticated: one holding
// all of its own leaves the other served, over CONNECT, SOCKS5 and
// absolute-form HTTP.
func TestGatewayConnectionsPerIdentity(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	web := serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	gate, err := egress.Compile(egress.Config{TaskAllowlist: map[string][]string{"alpha": {"alpha.test"}}, Local: egress.FixedAddrs{}})
	if err != nil {
		t.Fatal(err)
	}
	res := &fakeResolver{answers: map[string][]netip.Addr{"alpha.test": addrs(standIn("127.0.0.1"))}}
	tokA, sumA := mustToken(t)
	tokB, sumB := mustToken(t)
	events := newEventLog()
	g, err := NewGateway(GatewayConfig{
		Clients: []Client{{Name: "a", Task: "alpha", TokenSHA256: sumA}, {Name: "b", Task: "alpha", TokenSHA256: sumB}},
		Proxy: func(c Client) (Config, error) {
			return Config{Task: c.Task, Gate: gate, Resolver: res, Dialer: &dialLog{next: DialerFunc(testutil.LoopbackDialer(t))},
				OnEvent: events.add, Limits: Limits{MaxConns: 2}}, nil
		},
		OnEvent: events.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(func() { g.Close() })
	addr, target := ln.Addr().String(), up.hostPort("alpha.test")
	var held []net.Conn
	for range 2 {
		resp, c := connectAuth(t, addr, target, basic("a", tokA))
		if resp.StatusCode != 200 {
			t.Fatalf("a's tunnel: %d", resp.StatusCode)
		}
		exchange(t, c, "held")
		held = append(held, c)
	}
	if resp, _ := connectAuth(t, addr, target, basic("a", tokA)); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(resp.Header.Get(ReasonHeader), `connection of client "a" refused once authenticated`) {
		t.Errorf("a's third connection over CONNECT: %d %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	if _, st, _ := socksAuth(t, addr, []byte{socksUserPass}, "a", tokA); st != 1 {
		t.Errorf("a's third connection over SOCKS5: status %d", st)
	}
	hp := web.hostPort("alpha.test")
	if resp, _ := roundTrip(t, addr, "GET http://"+hp+"/ HTTP/1.1\r\nHost: "+hp+"\r\nProxy-Authorization: "+basic("a", tokA)+"\r\n\r\n"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a's third connection over HTTP: %d", resp.StatusCode)
	}
	for range 2 {
		resp, c := connectAuth(t, addr, target, basic("b", tokB))
		if resp.StatusCode != 200 {
			t.Fatalf("b beside a's full share: %d", resp.StatusCode)
		}
		exchange(t, c, "b")
		held = append(held, c)
	}
	if resp, body := roundTrip(t, addr, "GET http://"+hp+"/ HTTP/1.1\r\nHost: "+hp+"\r\nProxy-Authorization: "+basic("b", tokB)+"\r\n\r\n"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("b's third connection over HTTP: %d %s", resp.StatusCode, body)
	}
	// Every slot comes back: a keep-alive HTTP connection's, a tunnel's.
	// A tunnel's close is reported before its connection's slot is given
	// back, by the goroutine that ends the connection.
	for _, c := range held {
		c.Close()
	}
	events.wait(t, StageClosed, 4)
	given := func() {
		for _, tn := range g.tenants {
			waitFor(t, "client "+tn.client.Name+"'s connections given back", func() bool {
				total, _ := tn.p.connShare.counts(client{})
				return total == 0
			})
		}
	}
	given()
	c := dialProxy(t, addr)
	br := bufio.NewReader(c)
	for range 2 {
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: %s\r\n\r\n", hp, hp, basic("a", tokA))
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("a's keep-alive GET after the tunnels closed: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
	}
	if resp, c2 := connectAuth(t, addr, target, basic("a", tokA)); resp.StatusCode != 200 {
		t.Fatalf("a's tunnel beside its keep-alive connection: %d", resp.StatusCode)
	} else {
		c2.Close()
	}
	c.Close()
	events.wait(t, StageClosed, 7)
	given() // the server notices the keep-alive connection's close in its own time
	for range 2 {
		resp, c := connectAuth(t, addr, target, basic("a", tokA))
		if resp.StatusCode != 200 {
			t.Fatalf("a's tunnel once all closed: %d", resp.StatusCode)
		}
		defer c.Close()
	}
}
