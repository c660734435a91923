package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
)

// testCA is the CA of the tests' TLS upstreams (not the proxy's).
func testCA(t testing.TB) *CA {
	t.Helper()
	ca, err := NewCA("airlock test upstreams", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func pool(ca *CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Certificate())
	return p
}

// seen records the requests an upstream received.
type seen struct {
	mu   sync.Mutex
	reqs []string // "METHOD /path?query proto", then each header wanted
	auth []string
	hdrs []http.Header
	raw  []string // each request's target as it arrived
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r.Method+" "+r.URL.RequestURI()+" "+r.Proto)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.hdrs = append(s.hdrs, r.Header.Clone())
	s.raw = append(s.raw, r.RequestURI)
}

func (s *seen) all() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...), append([]string(nil), s.auth...)
}

// serveTLSUpstream serves HTTPS (HTTP/2 and HTTP/1.1) for host with a
// certificate of ca, echoing the request line and the body's length.
func serveTLSUpstream(t testing.TB, ca *CA, host string, s *seen) *httptest.Server {
	t.Helper()
	return serveTLSHandler(t, ca, host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		n, _ := io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/repos/echo": // a debugging endpoint: the request's headers back
			w.Header().Set("X-Echo", r.Header.Get("Authorization"))
			fmt.Fprintf(w, "accept-encoding=%s headers=%v", r.Header.Get("Accept-Encoding"), r.Header)
			return
		case "/repos/gzip": // an answer encoded though none was asked for
			w.Header().Set("Content-Encoding", "gzip")
			w.Write([]byte{0x1f, 0x8b})
			return
		}
		fmt.Fprintf(w, "%s %s %s body=%d", r.Method, r.URL.RequestURI(), r.Proto, n)
	}), true)
}

// serveTLSHandler serves h over HTTPS for host with a certificate of ca:
// HTTP/2 and HTTP/1.1, or HTTP/1.1 only.
func serveTLSHandler(t testing.TB, ca *CA, host string, h http.Handler, h2 bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	cert, err := ca.leaf(host)
	if err != nil {
		t.Fatal(err)
	}
	srv.EnableHTTP2 = h2
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes' noise
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func portOf(t testing.TB, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return pu.Port()
}

// inspectHarness is a proxy whose task t inspects api.test with rules,
// its upstream an HTTPS server with a certificate of a test CA, named in
// the entry as upstreamCa.
type inspectHarness struct {
	*harness
	ca, upCA *CA
	up       *seen
	port     string
	client   *http.Client
}

func newInspectHarness(t *testing.T, rules []egress.RuleConfig, extra func(*setup)) *inspectHarness {
	t.Helper()
	return newInspectHarnessWith(t, rules, extra)
}

func newInspectHarnessTB(b *testing.B, rules []egress.RuleConfig) *inspectHarness {
	b.Helper()
	return newInspectHarnessWith(b, rules, func(s *setup) { s.noEvents = true })
}

func newInspectHarnessWith(t testing.TB, rules []egress.RuleConfig, extra func(*setup)) *inspectHarness {
	t.Helper()
	upCA := testCA(t)
	caFile := filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(caFile, upCA.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := NewCA("airlock test session", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := setup{
		cfg: &egress.Config{
			TaskAllowlist: map[string][]string{"t": {"api.test", "other.test"}},
			Entries:       map[string]map[string]egress.EntryConfig{"t": {"api.test": {Inspect: true, Rules: rules, UpstreamCA: caFile}}},
		},
		answers: map[string][]netip.Addr{"api.test": addrs(standIn("127.0.0.1")), "other.test": addrs(standIn("127.0.0.1"))},
		ca:      ca,
	}
	if extra != nil {
		extra(&s)
	}
	up := &seen{}
	var srv *httptest.Server
	if s.upstream != nil {
		srv = serveTLSHandler(t, upCA, "api.test", s.upstream, !s.upstreamH1)
	} else {
		srv = serveTLSUpstream(t, upCA, "api.test", up)
	}
	h := newHarness(t, s)
	proxyURL, _ := url.Parse("http://" + h.addr)
	client := &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(proxyURL),
		TLSClientConfig:   &tls.Config{RootCAs: pool(ca)},
		ForceAttemptHTTP2: true,
		DisableKeepAlives: false,
	}}
	t.Cleanup(client.CloseIdleConnections)
	return &inspectHarness{harness: h, ca: ca, upCA: upCA, up: up, port: portOf(t, srv.URL), client: client}
}

func (ih *inspectHarness) do(t *testing.T, method, path string, body io.Reader, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "https://api.test:"+ih.port+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ih.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

var readRules = []egress.RuleConfig{
	{Name: "read", Methods: []string{"GET", "HEAD"}, Paths: []string{"/repos/acme/**"}},
	{Name: "upload", Methods: []string{"POST"}, PathPrefixes: []string{"/upload/"}},
	{Name: "no-secrets", Deny: true, Paths: []string{"/**/secrets/**"}},
}

// TestInspectedRules: an inspected entry's requests are decided one by
// one, over HTTP/2, with the rule that decided in the record.
func TestInspectedRules(t *testing.T) {
	ih := newInspectHarness(t, readRules, nil)
	resp, body := ih.do(t, "GET", "/repos/acme/widget", nil)
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.HasPrefix(body, "GET /repos/acme/widget HTTP/2.0") {
		t.Fatalf("allowed GET: %d %s %q", resp.StatusCode, resp.Proto, body)
	}
	for _, c := range []struct{ method, path, rule, reason string }{
		{"DELETE", "/repos/acme/widget", "", "no rule of entry"},
		{"GET", "/repos/acme/x/secrets/key", "no-secrets", "deny rules win"},
		{"GET", "/repos/acme/%2e%2e/other", "", "dot segment"},
		{"POST", "/elsewhere", "", "no rule"},
	} {
		resp, body := ih.do(t, c.method, c.path, nil)
		if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 403 || !strings.Contains(r, c.reason) || !strings.Contains(body, c.reason) {
			t.Errorf("%s %s: %d %q", c.method, c.path, resp.StatusCode, r)
		}
	}
	resp, body = ih.do(t, "POST", "/upload/x", strings.NewReader("12345"))
	if resp.StatusCode != 200 || !strings.Contains(body, "body=5") {
		t.Errorf("allowed POST: %d %q", resp.StatusCode, body)
	}
	reqs, _ := ih.up.all()
	if len(reqs) != 2 {
		t.Errorf("the upstream saw %q, want the two allowed requests only", reqs)
	}
	var rules []string
	for _, ev := range ih.events.stage(StageDecided) {
		if ev.Protocol == ProtocolInspected {
			rules = append(rules, ev.Method+" "+ev.Decision.Verdict.String()+" "+ev.Decision.Rule)
		}
	}
	want := "GET allow read|DELETE deny |GET deny no-secrets|GET deny |POST deny |POST allow upload"
	if strings.Join(rules, "|") != want {
		t.Errorf("inspected decisions %q, want %q", strings.Join(rules, "|"), want)
	}
}

// TestInspectedPipelined: HTTP/1.1 requests sent together in one write
// inside an inspected tunnel are decided one by one; the second, which
// breaks a rule, never reaches the upstream.
func TestInspectedPipelined(t *testing.T) {
	ih := newInspectHarness(t, readRules, nil)
	resp, c := connect(t, ih.addr, "api.test:"+ih.port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "api.test", RootCAs: pool(ih.ca), NextProtos: []string{"http/1.1"}})
	if _, err := io.WriteString(tc, "GET /repos/acme/a HTTP/1.1\r\nHost: api.test\r\n\r\n"+
		"DELETE /repos/acme/a HTTP/1.1\r\nHost: api.test\r\n\r\n"+
		"GET /repos/acme/b HTTP/1.1\r\nHost: evil.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(tc)
	var statuses []int
	for range 3 {
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		statuses = append(statuses, r.StatusCode)
		if r.StatusCode == 403 && r.Header.Get(ReasonHeader) == "" {
			t.Error("a refusal without X-Airlock-Reason")
		}
	}
	if fmt.Sprint(statuses) != "[200 403 403]" {
		t.Errorf("statuses %v", statuses)
	}
	if reqs, _ := ih.up.all(); len(reqs) != 1 {
		t.Errorf("the upstream saw %q", reqs)
	}
}

// TestInspectedSNIAndUpstream: the ClientHello of an inspected tunnel
// must name its host; the upstream's certificate is verified against the
// entry's CA, so an upstream the CA did not sign is a 502.
func TestInspectedSNIAndUpstream(t *testing.T) {
	ih := newInspectHarness(t, nil, nil)
	resp, c := connect(t, ih.addr, "api.test:"+ih.port)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "evil.test", RootCAs: pool(ih.ca)})
	if err := tc.Handshake(); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("fronted ClientHello: %v", err)
	}
	evs := ih.events.wait(t, StageRefused, 1)
	if !strings.Contains(evs[0].Decision.Reason, `names "evil.test" (SNI)`) {
		t.Errorf("refusal: %s", evs[0].Decision.Reason)
	}
	// An upstream whose certificate the entry's CA did not sign.
	other := serveTLSUpstream(t, testCA(t), "api.test", &seen{})
	req, _ := http.NewRequest("GET", "https://api.test:"+portOf(t, other.URL)+"/", nil)
	resp, err := ih.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 502 || !strings.Contains(r, "certificate") {
		t.Errorf("unverified upstream: %d %q", resp.StatusCode, r)
	}
}

// TestInspectedWebSocket: an upgrade is refused unless a rule allows it.
func TestInspectedWebSocket(t *testing.T) {
	ih := newInspectHarness(t, []egress.RuleConfig{
		{Name: "page", Methods: []string{"GET"}, Paths: []string{"/page"}},
		{Name: "live", Methods: []string{"GET"}, Paths: []string{"/live"}, WebSocket: true},
	}, nil)
	ih.client.Transport.(*http.Transport).ForceAttemptHTTP2 = false
	resp, _ := ih.do(t, "GET", "/page", nil, "Connection", "Upgrade", "Upgrade", "websocket")
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 403 || !strings.Contains(r, "not its WebSocket upgrade") {
		t.Errorf("upgrade on /page: %d %q", resp.StatusCode, r)
	}
	resp, _ = ih.do(t, "GET", "/live", nil, "Connection", "Upgrade", "Upgrade", "h2c")
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 403 || !strings.Contains(r, `upgrading to "h2c"`) {
		t.Errorf("h2c upgrade: %d %q", resp.StatusCode, r)
	}
	// Allowed: the upgrade reaches the upstream (which does not speak
	// WebSocket and answers 200).
	resp, _ = ih.do(t, "GET", "/live", nil, "Connection", "Upgrade", "Upgrade", "websocket")
	if resp.StatusCode != 200 {
		t.Errorf("allowed upgrade: %d %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
}

// TestCredentialInjected: the proxy sets the credential's header on the
// requests it is for, replacing the placeholder the client sent; the
// placeholder sent anywhere else is refused; no event holds the value.
func TestCredentialInjected(t *testing.T) {
	const value, ph = "s3cret-t0ken-value", "AIRLOCK-PLACEHOLDER-0123456789abcdef"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+value))
	ih := newInspectHarness(t, nil, func(s *setup) {
		s.cfg.Credentials = []egress.CredentialConfig{{Name: "gh", Host: "api.test", PathPrefixes: []string{"/repos/"}}}
		s.creds = []Credential{{Name: "gh", Header: "Authorization", Value: basic, Placeholder: ph}}
	})
	phBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph))
	resp, _ := ih.do(t, "GET", "/repos/acme", nil, "Authorization", phBasic)
	if resp.StatusCode != 200 {
		t.Fatalf("credentialed GET: %d %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	resp, _ = ih.do(t, "GET", "/other", nil, "Authorization", phBasic)
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 403 || !strings.Contains(r, `placeholder of credential "gh"`) {
		t.Errorf("placeholder on a path the credential is not for: %d %q", resp.StatusCode, r)
	}
	_, auth := ih.up.all()
	if len(auth) != 1 || auth[0] != basic {
		t.Errorf("the upstream got %q", auth)
	}
	// The credential's own request in plain HTTP: refused, not sent.
	plain, _ := roundTrip(t, ih.addr, "GET http://api.test:"+ih.port+"/repos/acme HTTP/1.1\r\nHost: api.test\r\nAuthorization: "+phBasic+"\r\n\r\n")
	apiTarget, _ := egress.SplitHostPort("api.test:"+ih.port, 0)
	wantPlain := egress.PlainCredentialRefusal(apiTarget, "gh", false)
	if r := plain.Header.Get(ReasonHeader); plain.StatusCode != 403 || wantPlain == "" || r != wantPlain {
		t.Errorf("credential over plain HTTP: %d %q, want 403 %q", plain.StatusCode, r, wantPlain)
	}
	// The placeholder to another host, in plain HTTP (absolute-form).
	_, body := roundTrip(t, ih.addr, "GET http://other.test:"+ih.port+"/?t="+ph+" HTTP/1.1\r\nHost: other.test\r\n\r\n")
	if !strings.Contains(body, "placeholder of credential") {
		t.Errorf("placeholder to another host: %q", body)
	}
	for _, ev := range ih.events.all() {
		if b, _ := ev.MarshalJSON(); bytes.Contains(b, []byte(value)) || bytes.Contains(b, []byte(basic)) {
			t.Errorf("an event holds the value: %s", b)
		}
	}
	if got := ih.p.scrub("x " + basic + " y"); strings.Contains(got, value) {
		t.Errorf("scrub left the value: %q", got)
	}
}

// TestCredentialEchoScrubbed: an upstream that echoes the request's
// headers (in its body and in a header of its answer) hands the sandbox
// none of the credential's value, in none of its spellings: the proxy
// asked for an uncompressed answer and replaced them; an answer encoded
// all the same is refused.
func TestCredentialEchoScrubbed(t *testing.T) {
	const value, ph = "s3cret-t0ken-value", "AIRLOCK-PLACEHOLDER-0123456789abcdef"
	token := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + value))
	basic := "Basic " + token
	ih := newInspectHarness(t, nil, func(s *setup) {
		s.cfg.Credentials = []egress.CredentialConfig{{Name: "gh", Host: "api.test", PathPrefixes: []string{"/repos/"}}}
		s.creds = []Credential{{Name: "gh", Header: "Authorization", Value: basic, Placeholder: ph}}
	})
	phBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph))
	resp, body := ih.do(t, "GET", "/repos/echo", nil, "Authorization", phBasic, "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 {
		t.Fatalf("echo: %d %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	answer := body + " " + fmt.Sprint(resp.Header)
	for _, form := range []string{value, token, "x-access-token:" + value} {
		if strings.Contains(answer, form) {
			t.Errorf("the answer holds %q: %s", form, answer)
		}
	}
	if !strings.Contains(body, "[credential gh redacted]") || !strings.Contains(body, "accept-encoding=identity") {
		t.Errorf("echoed body %q: want the value redacted and no compression asked for", body)
	}
	if _, auth := ih.up.all(); len(auth) != 1 || auth[0] != basic {
		t.Errorf("the upstream got %q, want the credential", auth)
	}
	resp, _ = ih.do(t, "GET", "/repos/gzip", nil, "Authorization", phBasic)
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 502 || !strings.Contains(r, "is encoded (gzip)") {
		t.Errorf("an encoded answer: %d %q, want 502 refused", resp.StatusCode, r)
	}
	// A request without the credential gets its answer as it is.
	resp, body = ih.do(t, "GET", "/other/echo", nil)
	if resp.StatusCode != 200 || strings.Contains(body, "redacted") {
		t.Errorf("an answer to a request without the credential: %d %q", resp.StatusCode, body)
	}
}

// TestOpaqueSNI: an opaque tunnel whose ClientHello names another host is
// refused before a byte reaches the upstream; one naming the tunnel's
// host passes.
func TestOpaqueSNI(t *testing.T) {
	upCA := testCA(t)
	srv := serveTLSUpstream(t, upCA, "api.test", &seen{})
	port := portOf(t, srv.URL)
	h := newHarness(t, setup{allow: []string{"api.test", "127.0.0.1:" + port},
		answers: map[string][]netip.Addr{"api.test": addrs(standIn("127.0.0.1"))}})
	for _, c := range []struct {
		target, sni string
		ok          bool
		reason      string
	}{
		{"api.test:" + port, "api.test", true, ""},
		{"api.test:" + port, "API.test.", true, ""},
		{"api.test:" + port, "evil.test", false, `names "evil.test" (SNI), another host`},
		{"127.0.0.1:" + port, "evil.test", false, "the tunnel is to an address"},
	} {
		resp, conn := connect(t, h.addr, c.target)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %s: %d", c.target, resp.StatusCode)
		}
		tc := tls.Client(conn, &tls.Config{ServerName: c.sni, RootCAs: pool(upCA), InsecureSkipVerify: !c.ok})
		err := tc.Handshake()
		if c.ok != (err == nil) || !c.ok && !strings.Contains(err.Error(), "access denied") {
			t.Errorf("%s with SNI %q: %v", c.target, c.sni, err)
		}
		tc.Close()
		if !c.ok {
			evs := h.events.wait(t, StageRefused, 1)
			if r := evs[len(evs)-1].Decision.Reason; !strings.Contains(r, c.reason) {
				t.Errorf("%s with SNI %q: %s", c.target, c.sni, r)
			}
			h.events.mu.Lock()
			h.events.events = nil
			h.events.mu.Unlock()
		}
	}
}

// TestOpaqueProtocol: an entry that requires TLS refuses other bytes; one
// that requires HTTP refuses TLS; plain HTTP in a tunnel is checked
// request by request, and a pipelined request naming another host never
// reaches the upstream.
func TestOpaqueProtocol(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.Host+" "+r.URL.Path)
		mu.Unlock()
	})
	port := fmt.Sprint(up.ap.Port())
	h := newHarness(t, setup{
		cfg: &egress.Config{
			TaskAllowlist: map[string][]string{"t": {"tls.test", "web.test"}},
			Entries:       map[string]map[string]egress.EntryConfig{"t": {"tls.test": {Protocol: egress.ProtocolTLS}, "web.test": {Protocol: egress.ProtocolHTTP}}},
		},
		answers: map[string][]netip.Addr{"tls.test": addrs(standIn("127.0.0.1")), "web.test": addrs(standIn("127.0.0.1"))},
	})
	_, c := connect(t, h.addr, "tls.test:"+port)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: tls.test\r\n\r\n")
	if r, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || r.StatusCode != 403 || !strings.Contains(r.Header.Get(ReasonHeader), "must carry TLS") {
		t.Errorf("HTTP into a TLS entry: %v %v", r, err)
	}
	_, c = connect(t, h.addr, "web.test:"+port)
	tc := tls.Client(c, &tls.Config{ServerName: "web.test", InsecureSkipVerify: true})
	if err := tc.Handshake(); err == nil {
		t.Error("TLS into an HTTP entry passed")
	}
	_, c = connect(t, h.addr, "web.test:"+port)
	io.WriteString(c, "GET /zero HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	if r, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || r.StatusCode != 403 || !strings.Contains(r.Header.Get(ReasonHeader), `names host "evil.test"`) {
		t.Errorf("a first request naming another host: %v %v", r, err)
	}
	_, c = connect(t, h.addr, "web.test:"+port)
	io.WriteString(c, "GET /one HTTP/1.1\r\nHost: web.test\r\n\r\nGET /two HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	br := bufio.NewReader(c)
	if r, err := http.ReadResponse(br, nil); err != nil || r.StatusCode != 200 {
		t.Fatalf("first request: %v %v", r, err)
	}
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Error("the second, fronted request was answered")
	}
	evs := h.events.wait(t, StageRefused, 4)
	if r := evs[3].Decision.Reason; !strings.Contains(r, `names host "evil.test"`) {
		t.Errorf("refusal: %s", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "GET web.test /one" {
		t.Errorf("the upstream saw %q", got)
	}
}

// TestBudgetBytesExact: a tunnel past a byte budget carries exactly the
// budget, then is ended; the crossing is reported once, and the next
// tunnel is refused with 429.
func TestBudgetBytesExact(t *testing.T) {
	var mu sync.Mutex
	var received int
	done := make(chan struct{})
	up := serveUpstream(t, "127.0.0.1:0", func(c net.Conn) {
		n, _ := io.Copy(io.Discard, c)
		mu.Lock()
		received = int(n)
		mu.Unlock()
		close(done)
	})
	target := up.ap.String()
	h := newHarness(t, setup{allow: []string{target}, budgets: []Budget{{Name: "task t", All: BudgetLimits{BytesOut: 600}}}})
	resp, c := connect(t, h.addr, target)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	c.Write(bytes.Repeat([]byte("x"), 400))
	time.Sleep(50 * time.Millisecond)
	c.Write(bytes.Repeat([]byte("y"), 600))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the tunnel was not ended")
	}
	mu.Lock()
	if received != 600 {
		t.Errorf("the upstream received %d bytes, want exactly the budget's 600", received)
	}
	mu.Unlock()
	evs := h.events.wait(t, StageBudget, 1)
	if !strings.Contains(evs[0].Decision.Reason, "budget task t reached: bytesOut of 600") {
		t.Errorf("crossing: %s", evs[0].Decision.Reason)
	}
	closed := h.events.wait(t, StageClosed, 1)
	if closed[0].BytesUp != 600 {
		t.Errorf("the tunnel's record says %d bytes up", closed[0].BytesUp)
	}
	resp, _ = connect(t, h.addr, target)
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 429 || !strings.Contains(r, "budget task t reached") {
		t.Errorf("after the budget: %d %q", resp.StatusCode, r)
	}
	if rep, _ := socksDial(t, h.addr, atypIPv4, "127.0.0.1", up.ap.Port()); rep != repNotAllowed {
		t.Errorf("SOCKS5 after the budget: reply %d", rep)
	}
}

// TestBudgetRequests: the requests cap counts inspected requests; past
// it they get 429, and a new step starts a per-step budget over.
func TestBudgetRequests(t *testing.T) {
	ih := newInspectHarness(t, nil, func(s *setup) {
		s.budgets = []Budget{{Name: "task t", PerStep: true, Hosts: map[string]BudgetLimits{"api.test": {Requests: 2}}}}
	})
	for i, want := range []int{200, 200, 429, 429} {
		resp, _ := ih.do(t, "GET", "/", nil)
		if resp.StatusCode != want {
			t.Errorf("request %d: %d %q", i, resp.StatusCode, resp.Header.Get(ReasonHeader))
		}
	}
	if evs := ih.events.stage(StageBudget); len(evs) != 1 {
		t.Errorf("%d crossings reported, want 1", len(evs))
	}
	ih.p.ResetStep()
	if resp, _ := ih.do(t, "GET", "/", nil); resp.StatusCode != 200 {
		t.Errorf("after a new step: %d", resp.StatusCode)
	}
}

// TestInspectedNeedsCA: without a CA an inspected entry fails closed.
func TestInspectedNeedsCA(t *testing.T) {
	ih := newInspectHarness(t, nil, func(s *setup) { s.ca = nil })
	resp, _ := connect(t, ih.addr, "api.test:"+ih.port)
	if r := resp.Header.Get(ReasonHeader); resp.StatusCode != 403 || !strings.Contains(r, "no CA") {
		t.Errorf("%d %q", resp.StatusCode, r)
	}
}

// BenchmarkInspectedRequest is one request on a kept-alive inspected
// tunnel (HTTP/1.1 each way of the proxy), the proxy's own cost per
// request with its rules (bench/proxy/inspect.sh compares it with other
// interceptors).
func BenchmarkInspectedRequest(b *testing.B) {
	ih := newInspectHarnessTB(b, readRules)
	ih.client.Transport.(*http.Transport).ForceAttemptHTTP2 = false
	ih.client.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	u := "https://api.test:" + ih.port + "/repos/acme/widget"
	b.ResetTimer()
	for range b.N {
		resp, err := ih.client.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
