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

// gatewayRun is "airlock proxy --gateway" running in process for two
// clients: sandbox-a of task alpha (upstream.test on portA) and sandbox-b
// of task beta (127.0.0.1 on portB).
type gatewayRun struct {
	addr, metricsAddr string
	tokA, tokB        string
	portA, portB      string
	logFile           string
	stderr            *testutil.SyncBuffer
	stop              func() // cancels and waits for the proxy to end
}

func startGateway(t *testing.T, extra ...string) *gatewayRun {
	t.Helper()
	upA, upB := httpUpstream(t), httpUpstream(t)
	g := &gatewayRun{stderr: &testutil.SyncBuffer{}}
	_, g.portA, _ = net.SplitHostPort(upA)
	_, g.portB, _ = net.SplitHostPort(upB)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	body := fmt.Sprintf(`{"toolScopes": {}, "egress": {"taskAllowlist": {"alpha": ["upstream.test:%s"], "beta": ["127.0.0.1:%s"]}}}`, g.portA, g.portB)
	if err := os.WriteFile(pol, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var sumA, sumB string
	g.tokA, sumA = mintToken(t)
	g.tokB, sumB = mintToken(t)
	gw := filepath.Join(dir, "clients.yaml")
	clients := fmt.Sprintf("clients:\n  - name: sandbox-a\n    task: alpha\n    tokenSHA256: %s\n  - name: sandbox-b\n    task: beta\n    tokenSHA256: %s\n", sumA, sumB)
	if err := os.WriteFile(gw, []byte(clients), 0o600); err != nil {
		t.Fatal(err)
	}
	g.logFile = filepath.Join(dir, "audit.jsonl")

	proxyDialer = proxy.DialerFunc(testutil.StandInDialer(t))
	proxyResolver = upstreamResolver{}
	t.Cleanup(func() { proxyDialer, proxyResolver = nil, nil })
	root := newRootCmd()
	root.SetArgs(append([]string{"--policy", pol, "proxy", "--gateway", gw, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--audit", g.logFile}, extra...))
	root.SetErr(g.stderr)
	root.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	stopped := false
	g.stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("proxy returned %v\n%s", err, g.stderr)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("proxy did not stop")
		}
	}
	t.Cleanup(g.stop)
	g.addr = waitListening(t, g.stderr, done)
	m := regexp.MustCompile(`metrics at http://(\S+)/metrics`).FindStringSubmatch(g.stderr.String())
	if m == nil {
		t.Fatalf("no metrics address:\n%s", g.stderr)
	}
	g.metricsAddr = m[1]
	return g
}

// curlIn runs curl with args (in the network namespace netns unless it
// is "") and returns its output followed by " STATUS".
func curlIn(t *testing.T, netns string, args ...string) string {
	t.Helper()
	argv := append([]string{"curl", "-sS", "--max-time", "10", "--noproxy", "", "-w", " %{http_code}"}, args...)
	if netns != "" {
		argv = append([]string{"ip", "netns", "exec", netns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no *_proxy variables from the host
	out, _ := cmd.Output()
	return string(out)
}

// TestProxyGateway runs "airlock proxy --gateway" in process for two
// clients of different tasks, each a curl process with its own token: each
// reaches its own task's upstream and not the other's, over absolute-form
// HTTP, CONNECT and SOCKS5; no token, a wrong one and another's are
// refused (407) and recorded without the token; the metrics listener,
// apart from the clients', counts what was sent (parsed by Prometheus's
// own parser).
func TestProxyGateway(t *testing.T) {
	testutil.RequireCommands(t, "curl")
	g := startGateway(t)
	addr, metricsAddr, tokA, tokB, portA, portB, logFile, stderr := g.addr, g.metricsAddr, g.tokA, g.tokB, g.portA, g.portB, g.logFile, g.stderr
	a, b := "http://upstream.test:"+portA+"/curl", "http://127.0.0.1:"+portB+"/curl"
	run := func(args ...string) string { return curlIn(t, "", args...) }
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

	g.stop()
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

// TestProxyGatewayInNetns: the gateway listens inside a network namespace
// (--netns) where two sandboxes, curl processes run in it, share one
// source address: their tokens alone tell them apart, each reaches its
// own task's upstream only, and the metrics listener, in airlock's own
// namespace, is out of their reach.
func TestProxyGatewayInNetns(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommands(t, "ip", "curl")
	name := fmt.Sprintf("airlock-gateway-test-%d", os.Getpid())
	for _, args := range [][]string{{"netns", "add", name}, {"-n", name, "link", "set", "lo", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete: %v: %s", err, out)
		}
	})
	g := startGateway(t, "--netns", "/run/netns/"+name)
	addr := g.addr // inside the namespace
	if !strings.Contains(g.stderr.String(), "in the network namespace /run/netns/"+name) {
		t.Fatalf("not listening in the namespace:\n%s", g.stderr)
	}
	a, b := "http://upstream.test:"+g.portA+"/curl", "http://127.0.0.1:"+g.portB+"/curl"
	viaA, viaB := "http://sandbox-a:"+g.tokA+"@"+addr, "http://sandbox-b:"+g.tokB+"@"+addr
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-x", viaA, a}, "hello /curl 200"},
		{[]string{"-x", viaB, b}, "hello /curl 200"},
		{[]string{"-x", viaA, b}, " 403"},
		{[]string{"-x", viaB, a}, " 403"},
		{[]string{"-x", "http://sandbox-b:" + g.tokA + "@" + addr, b}, " 407"},
		{[]string{"-x", "http://" + addr, b}, " 407"},
		// The upstreams and the metrics are in airlock's namespace: not
		// reachable from the sandboxes' but through the gateway.
		{[]string{b}, " 000"},
		{[]string{"http://" + g.metricsAddr + "/metrics"}, " 000"},
	} {
		if got := curlIn(t, name, c.args...); !strings.HasSuffix(got, c.want) || (strings.HasSuffix(c.want, "200") && got != c.want) {
			t.Errorf("curl in the namespace %v: %q, want %q", c.args, got, c.want)
		}
	}
	// From airlock's own namespace the metrics are there, and count both.
	resp, err := http.Get("http://" + g.metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`airlock_proxy_decisions_total{task="alpha",client="sandbox-a",verdict="allow"} 1`,
		`airlock_proxy_decisions_total{task="beta",client="sandbox-b",verdict="allow"} 1`,
		`airlock_proxy_decisions_total{task="",client="",verdict="rejected"} 2`,
	} {
		if !strings.Contains(string(text), want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, text)
		}
	}
}
