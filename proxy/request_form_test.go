package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/egress"
)

// formRules allow every request but what the deny rules name, and POSTs
// under /t/ only for tenant acme.
var formRules = []egress.RuleConfig{
	{Name: "read", Methods: []string{"GET"}},
	{Name: "tenant", Methods: []string{"POST"}, Paths: []string{"/t/**"}, Headers: map[string][]string{"X-Tenant": {"acme"}}},
	{Name: "no-admin", Deny: true, PathPrefixes: []string{"/api/admin/"}},
	{Name: "no-debug", Deny: true, Headers: map[string][]string{"X-Debug": {"1"}}},
}

func (s *seen) headers() ([]http.Header, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.hdrs...), append([]string(nil), s.raw...)
}

// rawInspected sends raw HTTP/1.1 requests in an inspected TLS tunnel to
// api.test and returns the answers.
func (ih *inspectHarness) rawInspected(t *testing.T, raw string, n int) []*http.Response {
	t.Helper()
	resp, c := connect(t, ih.addr, "api.test:"+ih.port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "api.test", RootCAs: pool(ih.ca), NextProtos: []string{"http/1.1"}})
	defer tc.Close()
	if _, err := io.WriteString(tc, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(tc)
	var out []*http.Response
	for range n {
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		out = append(out, r)
	}
	return out
}

// TestInspectedDecidedAsForwarded: a request is decided as it will be
// forwarded, over HTTP/1.1 and HTTP/2: a header Connection names is not
// decided on (it is not forwarded), path forms that servers route in
// different ways are refused, header names are read as CGI and WSGI
// servers fold them, and the target forwarded is the target decided.
// Each refused request here reached the upstream before.
func TestInspectedDecidedAsForwarded(t *testing.T) {
	ih := newInspectHarness(t, formRules, nil)
	for _, c := range []struct{ name, raw, reason string }{
		{"a header Connection names", "POST /t/x HTTP/1.1\r\nHost: api.test\r\nX-Tenant: acme\r\nConnection: X-Tenant\r\nContent-Length: 0\r\n\r\n", "no rule of entry"},
		{"path parameters", "GET /api/admin;/y HTTP/1.1\r\nHost: api.test\r\n\r\n", `has a ";"`},
		{"an escaped ;", "GET /api/admin%3B/y HTTP/1.1\r\nHost: api.test\r\n\r\n", `escaped "/"`},
		{"X_Debug", "GET /api/x HTTP/1.1\r\nHost: api.test\r\nX_Debug: 1\r\n\r\n", `deny rule "no-debug"`},
		{"two spellings", "GET /api/x HTTP/1.1\r\nHost: api.test\r\nX-Debug: 0\r\nX_Debug: 1\r\n\r\n", "read as one"},
		{"a method in lower case", "get /api/x HTTP/1.1\r\nHost: api.test\r\n\r\n", "not in upper case"},
		{"an opaque target", "GET https:api/admin/y HTTP/1.1\r\nHost: api.test\r\n\r\n", "does not start with /"},
		{"a method override", "GET /api/x HTTP/1.1\r\nHost: api.test\r\nX-HTTP-Method-Override: DELETE\r\n\r\n", "another method or path"},
	} {
		r := ih.rawInspected(t, c.raw, 1)[0]
		if why := r.Header.Get(ReasonHeader); r.StatusCode != 403 || !strings.Contains(why, c.reason) {
			t.Errorf("%s: %d %q, want 403 %q", c.name, r.StatusCode, why, c.reason)
		}
	}
	if reqs, _ := ih.up.all(); len(reqs) != 0 {
		t.Fatalf("the upstream saw %q", reqs)
	}
	// Allowed: the tenant's header arrives, the hop-by-hop one does not,
	// and the target is the one decided, byte for byte.
	raw := "POST /t/a%2Bb%7E{c} HTTP/1.1\r\nHost: api.test\r\nX-Tenant: acme\r\nConnection: keep-alive, X-Other\r\nX-Other: 1\r\nContent-Length: 0\r\n\r\n"
	if r := ih.rawInspected(t, raw, 1)[0]; r.StatusCode != 200 {
		t.Fatalf("allowed POST: %d %q", r.StatusCode, r.Header.Get(ReasonHeader))
	}
	hdrs, targets := ih.up.headers()
	var decided []string
	for _, ev := range ih.events.stage(StageDecided) {
		if ev.Protocol == ProtocolInspected && ev.Decision.Allowed() {
			decided = append(decided, ev.Method+" "+ev.Path)
		}
	}
	if len(targets) != 1 || len(decided) != 1 || "POST "+targets[0] != decided[0] || hdrs[0].Get("X-Tenant") != "acme" || hdrs[0].Get("X-Other") != "" {
		t.Errorf("decided %q, the upstream saw %q with %v", decided, targets, hdrs)
	}
	// HTTP/2.
	for _, c := range []struct {
		method, path string
		hdr          []string
		reason       string
	}{
		{"GET", "/api/admin;x/y", nil, `has a ";"`},
		{"GET", "/API/admin/y", nil, `deny rule "no-admin"`},
		{"GET", "/api/x", []string{"X_Debug", "1"}, `deny rule "no-debug"`},
		{"get", "/api/x", nil, "not in upper case"},
	} {
		resp, _ := ih.do(t, c.method, c.path, nil, c.hdr...)
		if why := resp.Header.Get(ReasonHeader); resp.ProtoMajor != 2 || resp.StatusCode != 403 || !strings.Contains(why, c.reason) {
			t.Errorf("HTTP/2 %s %s %v: %s %d %q, want 403 %q", c.method, c.path, c.hdr, resp.Proto, resp.StatusCode, why, c.reason)
		}
	}
	if reqs, _ := ih.up.all(); len(reqs) != 1 {
		t.Errorf("the upstream saw %q", reqs)
	}
}

// TestCredentialHeaderTwin: a request carrying a header that servers
// read as the credential's (X_Api_Key for X-Api-Key) is refused: the
// proxy would set the credential beside the client's own value.
func TestCredentialHeaderTwin(t *testing.T) {
	const value, ph = "s3cret-t0ken-value", "AIRLOCK-PLACEHOLDER-0123456789abcdef"
	ih := newInspectHarness(t, nil, func(s *setup) {
		s.cfg.Credentials = []egress.CredentialConfig{{Name: "key", Host: "api.test"}}
		s.creds = []Credential{{Name: "key", Header: "X-Api-Key", Value: value, Placeholder: ph}}
	})
	resp, _ := ih.do(t, "GET", "/x", nil, "X_Api_Key", "mine")
	if why := resp.Header.Get(ReasonHeader); resp.StatusCode != 403 || !strings.Contains(why, `carries "X_api_key", which servers read as the same header`) {
		t.Errorf("a twin of the credential's header: %d %q", resp.StatusCode, why)
	}
	resp, _ = ih.do(t, "GET", "/x", nil, "X-Api-Key", ph)
	if resp.StatusCode != 200 {
		t.Fatalf("the credential's own header: %d %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	if hdrs, _ := ih.up.headers(); len(hdrs) != 1 || hdrs[0].Get("X-Api-Key") != value {
		t.Errorf("the upstream got %v", hdrs)
	}
}

// wsgiApp is a WSGI server of Python's standard library answering the
// X-Debug it reads (HTTP_X_DEBUG: wsgiref, like every CGI-style server,
// reads "X_Debug" and "X-Debug" as one header). It prints its port.
const wsgiApp = `
from wsgiref.simple_server import make_server, WSGIRequestHandler
class Quiet(WSGIRequestHandler):
    def log_message(self, *args): pass
def app(environ, start):
    start("200 OK", [("Content-Type", "text/plain")])
    return [("debug=" + environ.get("HTTP_X_DEBUG", "")).encode()]
srv = make_server("127.0.0.1", 0, app, handler_class=Quiet)
print(srv.server_port, flush=True)
srv.serve_forever()
`

// serveWSGI starts wsgiApp and returns its port.
func serveWSGI(t *testing.T) uint16 {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-c", wsgiApp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var port uint16
	if _, err := fmt.Fscan(bufio.NewReader(out), &port); err != nil {
		t.Fatalf("the WSGI server's port: %v", err)
	}
	return port
}

// TestWSGIHeaderFold: a deny rule on X-Debug holds against a real WSGI
// server, which reads X_Debug as X-Debug (checked directly first), over
// plain HTTP to an inspected entry.
func TestWSGIHeaderFold(t *testing.T) {
	port := serveWSGI(t)
	get := func(addr, target, hdr string) (*http.Response, string) {
		t.Helper()
		return roundTrip(t, addr, "GET "+target+" HTTP/1.1\r\nHost: wsgi.test\r\n"+hdr+"Connection: close\r\n\r\n")
	}
	direct := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port).String()
	if _, body := get(direct, "/", "X_Debug: 1\r\n"); body != "debug=1" {
		t.Fatalf("wsgiref read X_Debug as %q, want debug=1", body)
	}
	h := newHarness(t, setup{
		cfg: &egress.Config{
			TaskAllowlist: map[string][]string{"t": {"wsgi.test"}},
			Entries: map[string]map[string]egress.EntryConfig{"t": {"wsgi.test": {Inspect: true, Rules: []egress.RuleConfig{
				{Name: "all"}, {Name: "no-debug", Deny: true, Headers: map[string][]string{"X-Debug": {"1"}}}}}}},
		},
		answers: map[string][]netip.Addr{"wsgi.test": addrs(standIn("127.0.0.1"))},
	})
	target := fmt.Sprintf("http://wsgi.test:%d/", port)
	for _, hdr := range []string{"X_Debug: 1\r\n", "X-Debug: 0\r\nX_Debug: 1\r\n", "X-Debug: 0, 1\r\n", "Connection: X-Debug\r\nX-Debug: 0\r\nX_Debug: 1\r\n"} {
		resp, body := get(h.addr, target, hdr)
		if resp.StatusCode != 403 || strings.Contains(body, "debug=1") {
			t.Errorf("%q: %d %q, want refused", hdr, resp.StatusCode, body)
		}
	}
	if resp, body := get(h.addr, target, "X-Debug: 0\r\n"); resp.StatusCode != 200 || body != "debug=0" {
		t.Errorf("allowed: %d %q", resp.StatusCode, body)
	}
}
