package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/proxy"
)

// mintToken runs "airlock proxy token" and returns its two lines.
func mintToken(t *testing.T) (token, sum string) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"proxy", "token"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || len(lines[1]) != 64 {
		t.Fatalf("airlock proxy token printed %q", out.String())
	}
	return lines[0], lines[1]
}

// TestProxyGateway runs "airlock proxy --gateway" in process for two
// clients of different tasks, each a curl process with its own token: each
// reaches its own task's upstream and not the other's, over absolute-form
// HTTP, CONNECT and SOCKS5; no token, a wrong one and another's are
// refused (407) and recorded without the token; the metrics listener,
// apart from the clients', counts what was sent (parsed by Prometheus's
// own parser).
func TestProxyGateway(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed: it is this test's client")
	}
	upA, upB := httpUpstream(t), httpUpstream(t)
	_, portA, _ := net.SplitHostPort(upA)
	_, portB, _ := net.SplitHostPort(upB)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	body := fmt.Sprintf(`{"toolScopes": {}, "egress": {"taskAllowlist": {"alpha": ["upstream.test:%s"], "beta": ["127.0.0.1:%s"]}}}`, portA, portB)
	if err := os.WriteFile(pol, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	tokA, sumA := mintToken(t)
	tokB, sumB := mintToken(t)
	gw := filepath.Join(dir, "clients.yaml")
	clients := fmt.Sprintf("clients:\n  - name: sandbox-a\n    task: alpha\n    tokenSHA256: %s\n  - name: sandbox-b\n    task: beta\n    tokenSHA256: %s\n", sumA, sumB)
	if err := os.WriteFile(gw, []byte(clients), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "audit.jsonl")

	proxyDialer = proxy.DialerFunc(testutil.StandInDialer(t))
	proxyResolver = upstreamResolver{}
	defer func() { proxyDialer, proxyResolver = nil, nil }()
	root := newRootCmd()
	root.SetArgs([]string{"--policy", pol, "proxy", "--gateway", gw, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--audit", logFile})
	stderr := &testutil.SyncBuffer{}
	root.SetErr(stderr)
	root.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	addr := waitListening(t, stderr, done)
	m := regexp.MustCompile(`metrics at http://(\S+)/metrics`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics address:\n%s", stderr)
	}
	metricsAddr := m[1]

	a, b := "http://upstream.test:"+portA+"/curl", "http://127.0.0.1:"+portB+"/curl"
	run := func(args ...string) string {
		cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "10", "--noproxy", "", "-w", " %{http_code}"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no *_proxy variables from the host
		out, _ := cmd.Output()
		return string(out)
	}
	viaA, viaB := "http://sandbox-a:"+tokA+"@"+addr, "http://sandbox-b:"+tokB+"@"+addr
	for _, c := range []struct {
		args []string
		want string // the status, after the body
	}{
		{[]string{"-x", viaA, a}, "hello /curl 200"},
		{[]string{"-p", "-x", viaA, a}, "hello /curl 200"},
		{[]string{"-x", "socks5h://sandbox-a:" + tokA + "@" + addr, a}, "hello /curl 200"},
		{[]string{"-x", viaA, b}, " 403"},
		{[]string{"-x", viaB, b}, "hello /curl 200"},
		{[]string{"-p", "-x", viaB, b}, "hello /curl 200"},
		{[]string{"-x", viaB, a}, " 403"},
		{[]string{"-x", "http://" + addr, a}, " 407"},
		{[]string{"-x", "http://sandbox-a:" + tokB + "@" + addr, a}, " 407"},
		{[]string{"-x", "http://sandbox-b:" + strings.ToUpper(tokB) + "@" + addr, b}, " 407"},
		{[]string{"-x", "socks5h://sandbox-a:" + tokB + "@" + addr, a}, " 000"},
		{[]string{"-x", "socks5h://" + addr, a}, " 000"},
		// The metrics are not served on the clients' listener.
		{[]string{"http://" + addr + "/metrics"}, " 407"},
	} {
		got := run(c.args...)
		if !strings.HasSuffix(got, c.want) || (strings.HasSuffix(c.want, "200") && got != c.want) {
			t.Errorf("curl %v: %q, want %q", c.args, got, c.want)
		}
	}

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("metrics: %v\n%s", err, text)
	}
	counter := func(name string, labels ...string) float64 {
		for _, m := range fams[name].GetMetric() {
			got := map[string]string{}
			for _, l := range m.Label {
				got[l.GetName()] = l.GetValue()
			}
			ok := true
			for i := 0; i < len(labels); i += 2 {
				ok = ok && got[labels[i]] == labels[i+1]
			}
			if ok && fams[name].GetType() == dto.MetricType_COUNTER {
				return m.Counter.GetValue()
			}
		}
		return -1
	}
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"task", "alpha", "client", "sandbox-a", "verdict", "allow"}, 3},
		{[]string{"task", "alpha", "client", "sandbox-a", "verdict", "deny"}, 1},
		{[]string{"task", "beta", "client", "sandbox-b", "verdict", "allow"}, 2},
		{[]string{"task", "beta", "client", "sandbox-b", "verdict", "deny"}, 1},
		{[]string{"task", "", "client", "", "verdict", "rejected"}, 6},
	} {
		if got := counter("airlock_proxy_decisions_total", c.labels...); got != c.want {
			t.Errorf("decisions%v = %v, want %v\n%s", c.labels, got, c.want, text)
		}
	}
	if got := counter("airlock_proxy_bytes_total", "task", "beta", "client", "sandbox-b", "direction", "down"); got < float64(2*len("hello /curl")) {
		t.Errorf("bytes down of sandbox-b: %v", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("proxy returned %v\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("proxy did not stop")
	}
	if !strings.Contains(stderr.String(), "(http from client sandbox-a at 127.0.0.1:") {
		t.Errorf("no decision line names its client:\n%s", stderr)
	}
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(bytes.NewReader(raw)); err != nil {
		t.Fatalf("audit verify: %v", err)
	}
	for _, tok := range []string{tokA, tokB, strings.ToUpper(tokB)} {
		if bytes.Contains(raw, []byte(tok)) || strings.Contains(stderr.String(), tok) {
			t.Errorf("a token is in the audit log or on stderr")
		}
	}
	refusals, identities := 0, map[string]string{}
	for ev, err := range audit.Events(bytes.NewReader(raw)) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ev.Reason, "proxy authentication refused") {
			refusals++
		}
		if id := ev.Context.Details["identity"]; id != "" && ev.Decision == audit.DecisionAllow {
			identities[id] = ev.Context.Task
		}
	}
	if refusals == 0 || identities["sandbox-a"] != "alpha" || identities["sandbox-b"] != "beta" {
		t.Errorf("audit: %d refusals, identities %v", refusals, identities)
	}
}

// TestLoadGatewayFileRefuses: a gateway file others could have written,
// a client of a task the policy lacks, and a malformed file are refused.
func TestLoadGatewayFileRefuses(t *testing.T) {
	dir := t.TempDir()
	_, sum := mintToken(t)
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "clients:\n  - name: a\n    task: alpha\n    tokenSHA256: " + sum + "\n"
	allow := map[string][]string{"alpha": {"a.test"}}
	if _, err := loadGatewayFile(write("ok.yaml", good, 0o600), allow); err != nil {
		t.Fatalf("a good file: %v", err)
	}
	for what, c := range map[string]struct {
		path, want string
	}{
		"group-writable": {write("gw.yaml", good, 0o620), "group- or world-writable"},
		"unknown task":   {write("task.yaml", strings.Replace(good, "alpha", "alpah", 1), 0o600), `did you mean "alpha"`},
		"malformed":      {write("bad.json", `{"clients": [{"name": "a"}], "extra": 1}`, 0o600), `unknown field "extra"`},
		"a device":       {"/dev/null", "not a regular file"},
	} {
		if _, err := loadGatewayFile(c.path, allow); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", what, err)
		}
	}
}
