package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/proxy"
)

// TestProxyCommand runs "airlock proxy" in process against loopback
// upstreams allowlisted in a policy file, reaches them over HTTP, CONNECT
// and SOCKS5 (with Go clients, and with curl when it is installed), is
// refused the metadata address, stops on cancellation, and leaves an
// intact audit log holding every decision.
func TestProxyCommand(t *testing.T) {
	upstream := httpUpstream(t)
	_, upPort, _ := net.SplitHostPort(upstream)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	body := fmt.Sprintf(`{"toolScopes": {}, "egress": {"taskAllowlist": {"ci": ["127.0.0.1:%s", "upstream.test:%s"]}}}`, upPort, upPort)
	if err := os.WriteFile(pol, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "audit.jsonl")

	// No name reaches loopback: upstream.test resolves to a stand-in that
	// the dialer connects to loopback (testutil.StandIn).
	proxyDialer = proxy.DialerFunc(testutil.StandInDialer(t))
	proxyResolver = upstreamResolver{}
	defer func() { proxyDialer, proxyResolver = nil, nil }()
	root := newRootCmd()
	root.SetArgs([]string{"--policy", pol, "proxy", "--task", "ci", "--listen", "127.0.0.1:0", "--audit", logFile})
	stderr := &testutil.SyncBuffer{}
	root.SetErr(stderr)
	root.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	addr := waitListening(t, stderr, done)

	proxyURL := &url.URL{Scheme: "http", Host: addr}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 10 * time.Second}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Absolute-form HTTP.
	if code, b := get("http://127.0.0.1:" + upPort + "/x"); code != 200 || b != "hello /x" {
		t.Errorf("HTTP: %d %q", code, b)
	}
	// Refused: the metadata address, and a port not in the allowlist.
	if code, b := get("http://169.254.169.254/latest/meta-data/"); code != 403 || !strings.Contains(b, "always blocked") {
		t.Errorf("metadata: %d %q", code, b)
	}
	// CONNECT.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT upstream.test:%s HTTP/1.1\r\nHost: upstream.test\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: upstream.test\r\nConnection: close\r\n\r\n", upPort)
	out, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(out), "HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK") || !strings.HasSuffix(string(out), "hello /tunnel") {
		t.Errorf("CONNECT: %q", out)
	}
	// SOCKS5, with the name resolved by the proxy.
	socks, err := xproxy.SOCKS5("tcp", addr, nil, xproxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := socks.Dial("tcp", "upstream.test:"+upPort)
	if err != nil {
		t.Fatalf("SOCKS5: %v", err)
	}
	fmt.Fprintf(sc, "GET /socks HTTP/1.1\r\nHost: upstream.test\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(sc), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	sc.Close()
	if string(b) != "hello /socks" {
		t.Errorf("SOCKS5: %q", b)
	}
	if _, err := socks.Dial("tcp", "metadata.google.internal:80"); err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
		t.Errorf("SOCKS5 to metadata: %v", err)
	}
	curlChecks(t, addr, upPort)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("proxy returned %v\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("proxy did not stop")
	}
	checkProxyAudit(t, logFile, stderr.String())
}

// curlChecks reaches the upstream through the proxy with curl's three
// proxy modes, when curl is installed.
func curlChecks(t *testing.T, addr, upPort string) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Log("curl not installed: skipping the curl checks")
		return
	}
	for _, args := range [][]string{
		{"-x", "http://" + addr, "http://127.0.0.1:" + upPort + "/curl"},
		{"-p", "-x", "http://" + addr, "http://upstream.test:" + upPort + "/curl"},
		{"--socks5-hostname", addr, "http://upstream.test:" + upPort + "/curl"},
		{"--socks5", addr, "http://127.0.0.1:" + upPort + "/curl"},
	} {
		cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "10", "--noproxy", ""}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no *_proxy variables from the host
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "hello /curl" {
			t.Errorf("curl %v: %q %v", args, out, err)
		}
	}
	cmd := exec.Command(curl, "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "-x", "http://"+addr, "http://0xa9fea9fe/")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, _ := cmd.Output(); string(out) != "403" {
		t.Errorf("curl to the metadata address in hex: %q", out)
	}
}

// checkProxyAudit verifies the log and finds the decisions in it.
func checkProxyAudit(t *testing.T, logFile, stderr string) {
	t.Helper()
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f); err != nil {
		t.Fatalf("audit verify: %v", err)
	}
	f.Seek(0, io.SeekStart)
	var allow, deny, closed, alerts int
	for ev, err := range audit.Events(f) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Kind == audit.KindEgress && ev.Decision == audit.DecisionAllow:
			allow++
			if ev.Context.Task != "ci" || ev.Context.Protocol == "" || ev.Context.Port == 0 {
				t.Errorf("allow event context %+v", ev.Context)
			}
		case ev.Kind == audit.KindEgress && ev.Decision == audit.DecisionDeny:
			deny++
			if !strings.Contains(ev.Reason, "always blocked") {
				t.Errorf("deny event %q", ev.Reason)
			}
		case ev.Kind == audit.KindEgress && ev.Decision == audit.DecisionInfo:
			closed++
		case ev.Kind == audit.KindBehavioral:
			alerts++
		}
	}
	// Two metadata attempts, one alert: the monitor raises a rule once a
	// window for a run (docs/audit.md, "Floods").
	if allow < 3 || deny < 2 || closed != allow || alerts != 1 {
		t.Errorf("audit: %d allow, %d deny, %d closed, %d alerts\n%s", allow, deny, closed, alerts, stderr)
	}
	if n := strings.Count(stderr, "airlock: egress: "); n != allow+deny {
		t.Errorf("%d decision lines on stderr for %d decisions:\n%s", n, allow+deny, stderr)
	}
}

// waitListening returns the address the proxy prints once it serves.
func waitListening(t *testing.T, stderr *testutil.SyncBuffer, done chan error) string {
	t.Helper()
	re := regexp.MustCompile(`serving HTTP and SOCKS5 on (\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("proxy exited: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("proxy never listened:\n%s", stderr)
	return ""
}

// upstreamResolver answers upstream.test, fully qualified as the proxy
// asks, with the stand-in of 127.0.0.1; nothing else resolves.
type upstreamResolver struct{}

func (upstreamResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "upstream.test." {
		return []netip.Addr{testutil.StandIn(netip.MustParseAddr("127.0.0.1"))}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// httpUpstream serves "hello PATH" on loopback.
func httpUpstream(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
