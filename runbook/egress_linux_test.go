package runbook_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
)

// standIns answers every name with the stand-in of 127.0.0.1, which the
// test dialer connects to loopback.
type standIns struct{}

func (standIns) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{testutil.StandIn(netip.MustParseAddr("127.0.0.1"))}, nil
}

// upstreams are the loopback servers of the egress policy tests: a plain
// HTTP sink counting the requests and body bytes it received, and an
// HTTPS API (httptest's certificate, for example.com and its
// subdomains) recording each request with its Authorization header.
type upstreams struct {
	sink, api *httptest.Server
	caFile    string
	mu        sync.Mutex
	requests  int
	bytes     int64
	seen      []string
}

func newUpstreams(t *testing.T) *upstreams {
	t.Helper()
	u := &upstreams{}
	u.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.requests++
		u.bytes += n
		u.mu.Unlock()
		fmt.Fprintf(w, "took %d\n", n)
	}))
	t.Cleanup(u.sink.Close)
	u.api = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		u.mu.Unlock()
		fmt.Fprintf(w, "api %s %s\n", r.Method, r.URL.Path)
	}))
	u.api.Config.ErrorLog = log.New(io.Discard, "", 0)
	u.api.StartTLS()
	t.Cleanup(u.api.Close)
	u.caFile = filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(u.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.api.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return u
}

func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// policy is the test policy with two more tasks: "budget", whose budget
// is 1000 bytes out and 3 requests, and "inspect", whose entry for
// api.example.com is inspected (GET under /ok/ only) and gets the
// credential "api".
func (u *upstreams) policy() string {
	return strings.Replace(testPolicy, `"taskAllowlist": {"t": ["upstream.test"]}}`, fmt.Sprintf(`"taskAllowlist": {"t": ["upstream.test"],
    "budget": ["upstream.test"],
    "inspect": [{"host": "api.example.com", "inspect": true, "upstreamCa": %q,
      "rules": [{"name": "read", "methods": ["GET"], "paths": ["/ok/**"]}]}]},
  "budgets": {"budget": {"bytesOut": 1000, "requests": 3}},
  "credentials": [{"name": "api", "host": "api.example.com", "scheme": "bearer", "fromEnv": "AIRLOCK_TEST_API_TOKEN", "sandboxEnv": "API_TOKEN"}]}`, u.caFile), 1)
}

// TestLaunchEgressPolicy: a plan's proxy applies the task's budget, its
// inspection rules and its credentials as airlock run's does (issue 23:
// launch's proxy had none of them). Ten uploads against a budget of
// 1,000 bytes and 3 requests are refused with 429 from the crossing on:
// of 5,000 bytes each, every one (the upstream gets at most the budget);
// of 300 bytes each, all but the first three. An inspected host gets the
// credential's value, which the sandbox holds only as a placeholder, and
// only the requests its rules allow.
func TestLaunchEgressPolicy(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommands(t, "curl")
	u := newUpstreams(t)
	secret := "api-secret-" + strings.Repeat("7", 20)
	t.Setenv("AIRLOCK_TEST_API_TOKEN", secret)

	for _, c := range []struct {
		size            int
		statuses        string
		requests, steps int
		bytes           int64
	}{
		{size: 5000, statuses: strings.Repeat("429\n", 10), requests: 1, bytes: 1000, steps: 1},
		{size: 300, statuses: strings.Repeat("200\n", 3) + strings.Repeat("429\n", 7), requests: 3, bytes: 900, steps: 2},
	} {
		t.Run(fmt.Sprintf("budget-%d", c.size), func(t *testing.T) {
			e := newEnv(t)
			e.pol = parsePolicy(t, u.policy())
			e.eopts.Resolver = standIns{}
			var out bytes.Buffer
			e.opts.Stdout = &out
			script := fmt.Sprintf(`for i in 1 2 3 4 5 6 7 8 9 10; do
  head -c %d /dev/zero | curl -sS -o /dev/null -w '%%{http_code}\n' --data-binary @- http://upstream.test:%s/up
done`, c.size, port(u.sink))
			p := plan("T-budget", sh("upload", script))
			if c.steps == 2 { // the task's budget starts over with each step
				p = plan("T-budget", sh("upload", script), sh("again", script))
			}
			p.Task = "budget"
			u.mu.Lock()
			u.requests, u.bytes = 0, 0
			u.mu.Unlock()
			res, err := e.launch(t, context.Background(), p)
			if err != nil || res.ExitCode != runbook.ExitOK {
				t.Fatalf("result %+v, %v\n%s", res, err, out.String())
			}
			if want := strings.Repeat(c.statuses, c.steps); out.String() != want {
				t.Errorf("statuses %q, want %q", out.String(), want)
			}
			u.mu.Lock()
			requests, n := u.requests, u.bytes
			u.mu.Unlock()
			if requests > c.requests*c.steps || n > c.bytes*int64(c.steps) {
				t.Errorf("the upstream got %d requests and %d bytes, past the budget of 3 and 1000 per step", requests, n)
			}
			var crossings int
			for _, ev := range e.events(t) {
				if ev.Context.Event == audit.EventEgressBudgetReached && ev.Context.RunID == res.RunID {
					crossings++
				}
			}
			if crossings < c.steps {
				t.Errorf("%d egress_budget_reached records, want one a step at least", crossings)
			}
		})
	}

	t.Run("inspect", func(t *testing.T) {
		e := newEnv(t)
		e.pol = parsePolicy(t, u.policy())
		e.eopts.Resolver = standIns{}
		var out bytes.Buffer
		e.opts.Stdout, e.opts.Stderr = &out, &out
		api := "https://api.example.com:" + port(u.api)
		p := plan("T-inspect", sh("api", fmt.Sprintf(`case "$API_TOKEN" in airlock-placeholder-*) echo placeholder;; esac
curl -sS -w 'status=%%{http_code}\n' %[1]s/ok/a
curl -sS -o /dev/null -w 'status=%%{http_code}\n' %[1]s/no/a
env; true`, api)))
		p.Task = "inspect"
		res, err := e.launch(t, context.Background(), p)
		if err != nil || res.ExitCode != runbook.ExitOK {
			t.Fatalf("result %+v, %v\n%s", res, err, out.String())
		}
		got := out.String()
		for _, want := range []string{"placeholder\n", "api GET /ok/a\nstatus=200\n", "status=403\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("inside, no %q:\n%s", want, got)
			}
		}
		if strings.Contains(got, secret) {
			t.Error("the credential's value is inside the sandbox")
		}
		u.mu.Lock()
		seen := strings.Join(u.seen, "|")
		u.mu.Unlock()
		if seen != "GET /ok/a Bearer "+secret {
			t.Errorf("the API saw %q, want only GET /ok/a with the credential", seen)
		}
		var credited bool
		for _, ev := range e.events(t) {
			credited = credited || ev.Context.Details["credential"] == "api"
		}
		if !credited {
			t.Error("no record names the credential added")
		}
	})
}

// TestLaunchHidesCredentialFile: a plan's sandbox hides what every
// sandbox hides, even in a tree it shows: a credential's file (launch hid
// only the policy, the audit log and the plan).
func TestLaunchHidesCredentialFile(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := os.MkdirTemp("/var/tmp", "airlock-private-") // not under /tmp, which the sandbox makes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // readable by the sandbox's uid, but for the hiding
		t.Fatal(err)
	}
	secret := "file-secret-" + strings.Repeat("5", 16)
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.pol = parsePolicy(t, strings.Replace(testPolicy, `"egress": {"default": "deny", "taskAllowlist": {"t": ["upstream.test"]}}`,
		fmt.Sprintf(`"filesystem": {"readOnly": ["/usr", "/bin", "/lib", "/lib64", "/etc", %[1]q]},
  "egress": {"default": "deny", "taskAllowlist": {"t": [{"host": "api.example.com", "inspect": true}]},
    "credentials": [{"name": "c", "host": "api.example.com", "scheme": "bearer", "fromFile": %[2]q}]}`, dir, token), 1))
	var out bytes.Buffer
	e.opts.Stdout, e.opts.Stderr = &out, &out
	p := plan("T-private", sh("look", "cat "+token+"; echo END"))
	p.Task = "t"
	res, err := e.launch(t, context.Background(), p)
	if err != nil || res.ExitCode != runbook.ExitOK {
		t.Fatalf("result %+v, %v\n%s", res, err, out.String())
	}
	if got := out.String(); !strings.Contains(got, "END") || strings.Contains(got, secret) {
		t.Errorf("inside, the credential's file was read:\n%s", got)
	}
}
