package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/runbook"
)

// The cross-entry-point table (issue 23): every control of the policy —
// the command gate, the caps, the egress allowlist, budgets, inspection
// rules, credentials, the audit records and the monitor's alerts — holds
// the same whichever way airlock is driven: run, session exec, launch,
// mcp, and proxy (for what a proxy decides: egress). Each entry point is
// the built airlock, run as a process as a harness runs it; every
// destination is on loopback.

// tableUpstreams are the destinations: a plain HTTP server that counts
// the requests and bytes it gets, and an HTTPS API (httptest's
// certificate, which names 127.0.0.1) recording each request with its
// Authorization header.
type tableUpstreams struct {
	plain, api *httptest.Server
	caFile     string
	mu         sync.Mutex
	apiSeen    []string
}

func newTableUpstreams(t *testing.T) *tableUpstreams {
	t.Helper()
	u := &tableUpstreams{}
	u.plain = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "plain %s %d\n", r.URL.Path, n)
	}))
	t.Cleanup(u.plain.Close)
	u.api = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.apiSeen = append(u.apiSeen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		u.mu.Unlock()
		fmt.Fprintf(w, "api %s\n", r.URL.Path)
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

func (u *tableUpstreams) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.apiSeen...)
}

// tablePolicy: tool "sh" runs sh -c and is denied rm; tool "slow" is sh
// with a wall cap of 1 s. Task "net" reaches the plain server, and the
// API inspected (GET under /ok/ only) with the credential "api"; task
// "budget" reaches the plain server with a budget of 3 requests.
func (u *tableUpstreams) policy() string {
	return fmt.Sprintf(`{
  "toolScopes": {
    "sh": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
           "deny": [{"name": "no-rm", "command": "rm", "argPatterns": [], "allowExtraArgs": true}]},
    "slow": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
             "caps": {"wallSeconds": 1}}
  },
  "caps": {"wallSeconds": 30, "cpuSeconds": 20, "memoryMb": 256, "processCount": 64},
  "egress": {
    "taskAllowlist": {
      "net": [%[1]q, {"host": %[2]q, "inspect": true, "upstreamCa": %[3]q,
        "rules": [{"name": "read", "methods": ["GET"], "paths": ["/ok/**"]}]}],
      "budget": [%[1]q]
    },
    "budgets": {"budget": {"requests": 3}},
    "credentials": [{"name": "api", "host": %[2]q, "scheme": "bearer", "fromEnv": "AIRLOCK_TEST_TABLE_TOKEN", "sandboxEnv": "API_TOKEN"}]
  }
}`, u.plain.Listener.Addr().String(), u.api.Listener.Addr().String(), u.caFile)
}

// tableSecret is the credential's value: it must reach the API and
// nothing else.
const tableSecret = "table-secret-5b1f0c9e77"

// control is one row of the table: what the agent asks (tool, task and a
// shell script), and what must hold of the outcome and of the audit log,
// the same through every entry point it applies to.
type control struct {
	name    string
	tool    string // "" means "sh"
	task    string
	command []string // the command asked for, when not sh -c script
	script  string
	// gated: a command the gate decides; an egress-only control also
	// runs through airlock proxy, as a client on the host.
	gated bool
	check func(t *testing.T, o outcome, u *tableUpstreams)
}

// outcome is what one entry point reports for one control, in the terms
// of airlock run's result: the command's exit status (the step's, for a
// launch), the cap that killed it, its standard output, and the records
// its audit log holds.
type outcome struct {
	exit     int
	killedBy string
	out      string
	events   []audit.Event
	raw      []byte
}

func (o outcome) has(f func(audit.Event) bool) bool {
	for _, ev := range o.events {
		if f(ev) {
			return true
		}
	}
	return false
}

func controls(u *tableUpstreams) []control {
	plain, api := "http://"+u.plain.Listener.Addr().String(), "https://"+u.api.Listener.Addr().String()
	_, plainPort, _ := net.SplitHostPort(u.plain.Listener.Addr().String())
	// Through $HTTP_PROXY always, loopback too (the sandbox's NO_PROXY
	// names it).
	curl := `curl -sS --noproxy '' -x "$HTTP_PROXY" -w ' %{http_code}\n' `
	return []control{{
		name: "gate allows", gated: true, task: "net", script: "echo allowed",
		check: func(t *testing.T, o outcome, _ *tableUpstreams) {
			if o.exit != 0 || o.out != "allowed\n" {
				t.Errorf("exit %d, output %q", o.exit, o.out)
			}
			if !o.has(func(ev audit.Event) bool { return ev.Kind == audit.KindCommand && ev.Decision == audit.DecisionAllow }) {
				t.Error("no command allow record")
			}
		},
	}, {
		name: "gate denies", gated: true, task: "net", command: []string{"rm", "-rf", "/workspace"},
		check: func(t *testing.T, o outcome, _ *tableUpstreams) {
			if o.exit != enforcer.ExitDenied || o.out != "" {
				t.Errorf("exit %d, output %q, want %d and nothing run", o.exit, o.out, enforcer.ExitDenied)
			}
			if !o.has(func(ev audit.Event) bool {
				return ev.Kind == audit.KindCommand && ev.Decision == audit.DecisionDeny && strings.Contains(ev.Reason, `deny rule "no-rm"`)
			}) {
				t.Error("no command deny record naming the rule")
			}
		},
	}, {
		name: "cap kills", gated: true, tool: "slow", task: "net", script: "sleep 10",
		check: func(t *testing.T, o outcome, _ *tableUpstreams) {
			if o.exit != 137 || o.killedBy != "wall" {
				t.Errorf("exit %d, killed by %q, want 137 and wall", o.exit, o.killedBy)
			}
			if !o.has(func(ev audit.Event) bool {
				return ev.Kind == audit.KindResource && ev.Decision == audit.DecisionKill && ev.Context.KilledBy == "wall"
			}) {
				t.Error("no kill record")
			}
		},
	}, {
		name: "egress allowed", task: "net", script: curl + plain + "/hello",
		check: func(t *testing.T, o outcome, _ *tableUpstreams) {
			if o.exit != 0 || o.out != "plain /hello 0\n 200\n" {
				t.Errorf("exit %d, output %q", o.exit, o.out)
			}
			if !o.has(func(ev audit.Event) bool { return ev.Kind == audit.KindEgress && ev.Decision == audit.DecisionAllow }) {
				t.Error("no egress allow record")
			}
		},
	}, {
		name: "egress denied", task: "net", script: curl + "-o /dev/null http://127.0.0.2:" + plainPort + "/",
		check: func(t *testing.T, o outcome, _ *tableUpstreams) {
			if o.exit != 0 || o.out != " 403\n" {
				t.Errorf("exit %d, output %q", o.exit, o.out)
			}
			if !o.has(func(ev audit.Event) bool {
				return ev.Kind == audit.KindEgress && ev.Decision == audit.DecisionDeny && strings.Contains(ev.Reason, "127.0.0.2")
			}) {
				t.Error("no egress deny record")
			}
		},
	}, {
		name: "budget crossed, alert raised", task: "budget",
		script: "for i in 1 2 3 4; do " + curl + "-o /dev/null --data-binary x " + plain + "/up; done",
		check: func(t *testing.T, o outcome, _ *tableUpstreams) {
			if o.exit != 0 || o.out != " 200\n 200\n 200\n 429\n" {
				t.Errorf("exit %d, output %q", o.exit, o.out)
			}
			if !o.has(func(ev audit.Event) bool { return ev.Context.Event == audit.EventEgressBudgetReached }) {
				t.Error("no egress_budget_reached record")
			}
			if !o.has(func(ev audit.Event) bool { return ev.Context.Alert == monitor.RuleEgressBudget }) {
				t.Error("no egress_budget alert")
			}
		},
	}, {
		name: "inspection rule refuses", task: "net", script: curl + "-o /dev/null " + api + "/no/x",
		check: func(t *testing.T, o outcome, u *tableUpstreams) {
			if o.exit != 0 || o.out != " 403\n" {
				t.Errorf("exit %d, output %q", o.exit, o.out)
			}
			if seen := u.seen(); len(seen) != 0 {
				t.Errorf("the API saw %q", seen)
			}
			if !o.has(func(ev audit.Event) bool {
				return ev.Kind == audit.KindEgress && ev.Decision == audit.DecisionDeny && strings.Contains(ev.Reason, "/no/x")
			}) {
				t.Error("no record of the request refused")
			}
		},
	}, {
		name: "credential injected, never seen", task: "net",
		script: curl + api + "/ok/cred; env | grep -c " + tableSecret[:len(tableSecret)-4] + "; true",
		check: func(t *testing.T, o outcome, u *tableUpstreams) {
			if o.exit != 0 || o.out != "api /ok/cred\n 200\n0\n" {
				t.Errorf("exit %d, output %q", o.exit, o.out)
			}
			if seen := u.seen(); len(seen) != 1 || seen[0] != "GET /ok/cred Bearer "+tableSecret {
				t.Errorf("the API saw %q, want the request with the credential", seen)
			}
			if !o.has(func(ev audit.Event) bool { return ev.Context.Details["credential"] == "api" }) {
				t.Error("no record names the credential")
			}
			if bytes.Contains(o.raw, []byte(tableSecret)) {
				t.Error("the credential's value is in the audit log")
			}
		},
	}}
}

// entryPoint drives one control through one way of running airlock.
type entryPoint struct {
	name string
	// gateless: the entry point decides no command (airlock proxy): only
	// the egress controls apply, run by a client on the host.
	gateless bool
	run      func(t *testing.T, f *tableFixture, c control) outcome
}

// tableFixture is what every entry point shares: airlock, its policy, a
// workspace, and the environment of a harness.
type tableFixture struct {
	bin, dir, policy, ws string
	env                  []string
}

func (c control) argv() []string {
	if c.command != nil {
		return c.command
	}
	return []string{"sh", "-c", c.script}
}

func (c control) toolName() string {
	if c.tool == "" {
		return "sh"
	}
	return c.tool
}

// airlock runs airlock with args and returns its stdout, stderr and
// exit status.
func (f *tableFixture) airlock(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(f.bin, args...)
	cmd.Dir, cmd.Env = f.dir, f.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("airlock %v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// auditOf reads an audit log, which must verify.
func auditOf(t *testing.T, path string, o *outcome) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(bytes.NewReader(raw)); err != nil {
		t.Errorf("the audit log does not verify: %v", err)
	}
	o.raw = raw
	for ev, err := range audit.Events(bytes.NewReader(raw)) {
		if err != nil {
			t.Fatal(err)
		}
		o.events = append(o.events, ev)
	}
}

// fromResult is the outcome of a run's result (run, session exec, mcp).
func fromResult(t *testing.T, js []byte) outcome {
	t.Helper()
	var res enforcer.Result
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatalf("result %q: %v", js, err)
	}
	o := outcome{exit: res.ExitCode}
	if res.KilledBy != nil {
		o.killedBy = *res.KilledBy
	}
	if res.Stdout != nil {
		o.out = res.Stdout.Text
	}
	return o
}

var entryPoints = []entryPoint{{
	name: "run",
	run: func(t *testing.T, f *tableFixture, c control) outcome {
		logFile := filepath.Join(t.TempDir(), "audit.jsonl")
		stdout, stderr, _ := f.airlock(t, append([]string{"run", "--policy", f.policy, "--audit", logFile, "--workspace", f.ws,
			"--tool", c.toolName(), "--task", c.task, "--json", "--"}, c.argv()...)...)
		t.Logf("stderr: %s", stderr)
		o := fromResult(t, []byte(stdout))
		auditOf(t, logFile, &o)
		return o
	},
}, {
	name: "session exec",
	run: func(t *testing.T, f *tableFixture, c control) outcome {
		logFile := filepath.Join(t.TempDir(), "audit.jsonl")
		id := enforcer.NewSessionID()
		if out, stderr, code := f.airlock(t, "session", "start", "--policy", f.policy, "--audit", logFile, "--id", id,
			"--task", c.task, "--workspace", f.ws); code != 0 {
			t.Fatalf("session start: %d %s %s", code, out, stderr)
		}
		stdout, stderr, _ := f.airlock(t, append([]string{"session", "exec", id, "--tool", c.toolName(), "--json", "--"}, c.argv()...)...)
		t.Logf("stderr: %s", stderr)
		if out, stderr, code := f.airlock(t, "session", "stop", id); code != 0 {
			t.Errorf("session stop: %d %s %s", code, out, stderr)
		}
		o := fromResult(t, []byte(stdout))
		auditOf(t, logFile, &o)
		return o
	},
}, {
	name: "launch",
	run: func(t *testing.T, f *tableFixture, c control) outcome {
		dir := t.TempDir()
		logFile, planFile := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "plan.json")
		argv := c.argv()
		plan, _ := json.Marshal(runbook.Plan{TestID: "table", Task: c.task,
			Steps: []runbook.Step{{Name: "only", Tool: c.toolName(), Command: argv[0], Args: argv[1:]}}})
		if err := os.WriteFile(planFile, plan, 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := f.airlock(t, "launch", "--policy", f.policy, "--audit", logFile, "--workspace", f.ws,
			"--evidence", filepath.Join(dir, "evidence"), "--plan", planFile, "--json")
		var res runbook.Result
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Steps) != 1 {
			t.Fatalf("launch result %q: %v\n%s", stdout, err, stderr)
		}
		// A step's exit status and cap are as airlock run gives them; a
		// plan refused runs no step, and exits as run would have.
		o := outcome{exit: code}
		if s := res.Steps[0]; s.ExitCode != nil {
			o.exit = *s.ExitCode
			if s.KilledBy != nil {
				o.killedBy = *s.KilledBy
			}
		}
		// With --json the steps' output goes to stderr, airlock's own
		// lines after it.
		o.out = regexp.MustCompile(`(?m)^airlock: .*\n`).ReplaceAllString(stderr, "")
		auditOf(t, logFile, &o)
		return o
	},
}, {
	name: "mcp",
	run: func(t *testing.T, f *tableFixture, c control) outcome {
		logFile := filepath.Join(t.TempDir(), "audit.jsonl")
		cmd := exec.Command(f.bin, "mcp", "--policy", f.policy, "--audit", logFile, "--workspace", f.ws, "--task", c.task)
		cmd.Dir, cmd.Env = f.dir, f.env
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "table", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
		if err != nil {
			t.Fatal(err)
		}
		argv := c.argv()
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.toolName(),
			Arguments: map[string]any{"command": argv[0], "args": argv[1:]}})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		js, _ := json.Marshal(r.StructuredContent)
		o := fromResult(t, js)
		auditOf(t, logFile, &o)
		return o
	},
}, {
	name:     "proxy",
	gateless: true,
	run: func(t *testing.T, f *tableFixture, c control) outcome {
		dir := t.TempDir()
		logFile, caFile := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "ca.pem")
		// A task that adds credentials is served only to clients that
		// authenticate: a gateway of one client.
		token, sum, err := proxy.MintToken()
		if err != nil {
			t.Fatal(err)
		}
		gw := filepath.Join(dir, "gateway.json")
		if err := os.WriteFile(gw, fmt.Appendf(nil, `{"clients": [{"name": "table", "task": %q, "tokenSHA256": %q}]}`, c.task, sum), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(f.bin, "proxy", "--policy", f.policy, "--audit", logFile, "--gateway", gw, "--listen", "127.0.0.1:0", "--ca-cert", caFile)
		cmd.Dir, cmd.Env = f.dir, f.env
		stderr := &testutil.SyncBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		var addr string
		for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
			if m := regexp.MustCompile(`serving HTTP and SOCKS5 on (\S+)`).FindStringSubmatch(stderr.String()); m != nil {
				addr = m[1]
			} else if time.Now().After(deadline) {
				t.Fatalf("airlock proxy never served:\n%s", stderr)
			}
		}
		// The client is the script, on the host, with the proxy and its
		// CA as its only settings: none of airlock's environment.
		client := exec.Command("sh", "-c", c.script)
		client.Env = []string{"PATH=" + os.Getenv("PATH"), "HTTP_PROXY=http://table:" + token + "@" + addr, "CURL_CA_BUNDLE=" + caFile}
		out, err := client.Output()
		o := outcome{out: string(out)}
		if err != nil {
			o.exit = client.ProcessState.ExitCode()
		}
		// Stopped, so that every record is written and synced.
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		t.Logf("stderr: %s", stderr)
		auditOf(t, logFile, &o)
		return o
	},
}}

// TestEveryEntryPointSameControls runs every control of the table
// through every entry point it applies to and checks the same outcome
// each time.
func TestEveryEntryPointSameControls(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommands(t, "curl")
	u := newTableUpstreams(t)
	bin, err := exec.LookPath("airlock") // put on $PATH by testscript.Main
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &tableFixture{bin: bin, dir: dir, policy: filepath.Join(dir, "policy.json"), ws: filepath.Join(dir, "ws")}
	if err := os.WriteFile(f.policy, []byte(u.policy()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopHolders(run + "/airlock") })
	f.env = append(os.Environ(), "AIRLOCK_POLICY=", "AIRLOCK_AUDIT_KEY=", "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR="+run, "AIRLOCK_TEST_TABLE_TOKEN="+tableSecret)
	for _, c := range controls(u) {
		t.Run(c.name, func(t *testing.T) {
			for _, ep := range entryPoints {
				if c.gated && ep.gateless {
					continue
				}
				t.Run(ep.name, func(t *testing.T) {
					u.mu.Lock()
					u.apiSeen = nil
					u.mu.Unlock()
					c.check(t, ep.run(t, f, c), u)
				})
			}
		})
	}
}
