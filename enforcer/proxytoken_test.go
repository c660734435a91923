package enforcer

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
)

// TestProxyToken serves a task's proxy as macOS does, on a loopback
// listener any local process could reach, behind the sandbox's token, and
// sends it real clients' requests (curl over HTTP, CONNECT and SOCKS5;
// Python's urllib) with the token in the proxy URL, as the sandbox's
// variables carry it: with it they reach the destination; without it or
// with a wrong one they are refused (407, or SOCKS5's failure) and
// recorded, and reach nothing. The token never reaches the destination
// nor a record.
func TestProxyToken(t *testing.T) {
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	var mu sync.Mutex
	var hits []http.Header
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.Header.Clone())
		mu.Unlock()
		fmt.Fprint(w, "reached")
	}))
	defer dest.Close()
	pol, err := policy.Parse("token.json", []byte(fmt.Sprintf(`{
  "toolScopes": {"shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}]}},
  "egress": {"default": "deny", "taskAllowlist": {"t": [%q]}}
}`, dest.Listener.Addr().String())))
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e, err := New(pol, log, Options{Dialer: proxy.DialerFunc(testutil.LoopbackDialer(t))})
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.newEgress("t", false)
	if err != nil {
		t.Fatal(err)
	}
	if g.token, _, err = proxy.MintToken(); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	rec := EgressRecorder{Context: func() audit.Context { return audit.Context{} },
		Record: func(ev audit.Event, _ bool) error {
			b, _ := json.Marshal(ev)
			mu.Lock()
			recs = append(recs, string(b))
			mu.Unlock()
			return nil
		}}
	if err := g.Serve(lis, 256, rec); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	at := lis.Addr().String()
	wrong, _, _ := proxy.MintToken()
	for _, c := range []struct {
		name, auth string
		argv       []string
		reached    bool
	}{
		{"curl, no token", "", []string{"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", "http://%s", "%d"}, false},
		{"curl, wrong token", "airlock:" + wrong + "@", []string{"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", "http://%s", "%d"}, false},
		{"curl, token", "airlock:" + g.token + "@", []string{"curl", "-sS", "-f", "-x", "http://%s", "%d"}, true},
		{"curl CONNECT, wrong token", "airlock:" + wrong + "@", []string{"curl", "-sS", "-p", "-x", "http://%s", "%d"}, false},
		{"curl CONNECT, token", "airlock:" + g.token + "@", []string{"curl", "-sS", "-f", "-p", "-x", "http://%s", "%d"}, true},
		{"curl SOCKS5, wrong token", "airlock:" + wrong + "@", []string{"curl", "-sS", "-x", "socks5h://%s", "%d"}, false},
		{"curl SOCKS5, token", "airlock:" + g.token + "@", []string{"curl", "-sS", "-f", "-x", "socks5h://%s", "%d"}, true},
		{"urllib, wrong token", "airlock:" + wrong + "@", []string{"python3", "-c", urllibGet, "http://%s", "%d"}, false},
		{"urllib, token", "airlock:" + g.token + "@", []string{"python3", "-c", urllibGet, "http://%s", "%d"}, true},
	} {
		mu.Lock()
		before := len(hits)
		mu.Unlock()
		argv := append([]string(nil), c.argv...)
		for i, a := range argv {
			switch a {
			case "http://%s", "socks5h://%s":
				argv[i] = strings.Replace(a, "%s", c.auth+at, 1)
			case "%d":
				argv[i] = dest.URL + "/x"
			}
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		mu.Lock()
		reached := len(hits) > before
		mu.Unlock()
		switch {
		case reached != c.reached:
			t.Errorf("%s: reached the destination: %v, want %v (%v: %s)", c.name, reached, c.reached, err, out)
		case c.reached && (err != nil || string(out) != "reached"):
			t.Errorf("%s: %v: %s", c.name, err, out)
		case !c.reached && err == nil && string(out) != "407":
			t.Errorf("%s: %s, want 407 or a failure", c.name, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range hits {
		for k, vs := range h {
			if strings.EqualFold(k, "Proxy-Authorization") || strings.Contains(strings.Join(vs, " "), g.token) {
				t.Errorf("the destination got %s: %q", k, vs)
			}
		}
	}
	refused := 0
	for _, r := range recs {
		if strings.Contains(r, g.token) || strings.Contains(r, wrong) {
			t.Errorf("a record holds a token: %s", r)
		}
		if strings.Contains(r, "proxy authentication refused") {
			refused++
		}
	}
	if refused < 5 {
		t.Errorf("%d refusals recorded, want one per request without the token (5):\n%s", refused, strings.Join(recs, "\n"))
	}
}

// urllibGet prints the body of argv[2] fetched through the proxy argv[1],
// or exits 1 with the HTTP error.
const urllibGet = `import sys, urllib.request
p = urllib.request.ProxyHandler({"http": sys.argv[1], "https": sys.argv[1]})
try:
    sys.stdout.write(urllib.request.build_opener(p).open(sys.argv[2], timeout=10).read().decode())
except urllib.error.HTTPError as e:
    sys.stdout.write(str(e.code)); sys.exit(1)
`
