package enforcer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// testPolicy is the seed's policy plus a tool that may run the test
// binary as a payload, with small caps so that kills come quickly.
const testPolicy = `{
  "toolScopes": {
    "run_tests": {"allow": [
      {"name": "pytest", "command": "pytest", "argPatterns": [["-v"], ["-v", "-x"]], "allowExtraArgs": false}]},
    "install_deps": {"allow": [
      {"name": "pip-install", "command": "pip", "argPatterns": [["install", "-r", "requirements.txt"]], "allowExtraArgs": false}]},
    "read_file": {"allow": [{"name": "cat", "command": "cat", "argPatterns": [], "allowExtraArgs": true}]},
    "shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
              "deny": [{"name": "no-rm", "command": "rm", "allowExtraArgs": true, "justification": "use git to undo changes"}],
              "escalate": [{"name": "sh-approved", "command": "sh", "argPatterns": [["-c", "echo approved"]]}]},
    "agent_code": {"allow": [{"name": "payload", "command": "/.airlock/self", "argPatterns": [["payload"]], "allowExtraArgs": true}],
                   "escalate": [{"name": "ask-first", "command": "/.airlock/self", "argPatterns": [["payload", "echo", "ask"]], "allowExtraArgs": true,
                                 "justification": "this one needs a person"}],
                   "caps": {"cpuSeconds": 1, "wallSeconds": 3, "memoryMb": 128, "processCount": 32}}
  },
  "egress": {
    "default": "deny",
    "taskAllowlist": {
      "web_search": ["search.example-corp.net", "api.search.example-corp.net"],
      "fetch_docs": ["docs.spec.host"],
      "install_deps": ["registry-proxy.internal"]
    },
    "alwaysBlocked": ["169.254.169.254", "169.254.170.2", "metadata.google.internal"]
  }
}`

type fixture struct {
	enf   *enforcer.Enforcer
	pol   *policy.Loaded
	log   *audit.Log
	path  string
	mu    sync.Mutex
	seen  []audit.Event
	dials []string
	// after, when set before a run, is called with each event once it
	// is durable, outside the lock.
	after func(audit.Event)
}

func newFixture(t *testing.T, resolver proxy.Resolver, adjust ...func(*enforcer.Options)) *fixture {
	t.Helper()
	return newFixtureWith(t, testPolicy, false, resolver, adjust...)
}

// newFixtureIn is newFixture with the audit log in dir and the policy
// polJSON.
func newFixtureIn(t *testing.T, dir, polJSON string, resolver proxy.Resolver) *fixture {
	t.Helper()
	return newFixtureAt(t, dir, polJSON, false, resolver)
}

// newFixtureWith is newFixture for another policy, with the monitor
// watching the log when monitored.
func newFixtureWith(t *testing.T, src string, monitored bool, resolver proxy.Resolver, adjust ...func(*enforcer.Options)) *fixture {
	t.Helper()
	return newFixtureAt(t, t.TempDir(), src, monitored, resolver, adjust...)
}

// newFixtureAt is newFixtureWith with the audit log in dir.
func newFixtureAt(t *testing.T, dir, src string, monitored bool, resolver proxy.Resolver, adjust ...func(*enforcer.Options)) *fixture {
	t.Helper()
	pol, err := policy.Parse("test.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{pol: pol, path: filepath.Join(dir, "audit.jsonl")}
	var hooks []audit.Option
	if monitored {
		hooks = append(hooks, audit.WithHook(monitor.New(monitor.ThresholdsFor(pol.Policy))))
	}
	f.log, err = audit.Open(f.path, hooks...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.log.Close() })
	var self sandbox.Config
	self.BindSelf()
	dial := testutil.LoopbackDialer(t)
	opts := enforcer.Options{
		Binds:    self.Binds,
		Resolver: resolver,
		Dialer: proxy.DialerFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			f.mu.Lock()
			f.dials = append(f.dials, addr)
			f.mu.Unlock()
			return dial(ctx, network, addr)
		}),
		OnEvent: func(ev audit.Event) {
			f.mu.Lock()
			f.seen = append(f.seen, ev)
			f.mu.Unlock()
			if f.after != nil {
				f.after(ev)
			}
		},
	}
	for _, a := range adjust {
		a(&opts)
	}
	f.enf, err = enforcer.New(pol, f.log, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) events(runID string) []audit.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []audit.Event
	for _, ev := range f.seen {
		if ev.Context.RunID == runID {
			out = append(out, ev)
		}
	}
	return out
}

func (f *fixture) verify(t *testing.T) audit.Report {
	t.Helper()
	r, err := os.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := audit.Verify(r)
	if err != nil {
		t.Fatalf("audit log does not verify: %v", err)
	}
	return rep
}

// TestLabCommandCases runs the five cases of lab 1.4 through Run: each
// refusal exits 77 with its reason, is audited, and spawns nothing.
func TestLabCommandCases(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		tool, cmd string
		args      []string
		reason    string
	}{
		{"run_tests", "git", []string{"clone", "https://attacker.example/repo"}, `"git" is not in the allowlist of tool "run_tests" (allowlist: [pytest]): deny by default`},
		{"install_deps", "pytest", nil, `"pytest" is not in the allowlist of tool "install_deps" (allowlist: [pip]): deny by default`},
		{"install_deps", "pip", []string{"install", "evil-package"}, `"pip" is in the allowlist of tool "install_deps" but its arguments match no signature: deny by default`},
		{"unknown_tool", "ls", nil, `no scope for tool "unknown_tool": deny by default`},
	} {
		res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: c.tool, Command: c.cmd, Args: c.args})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != enforcer.ExitDenied || res.Decision != decision.Deny || res.Reason != c.reason || res.Path != "" {
			t.Errorf("%s %s: got exit %d %s %q path %q", c.tool, c.cmd, res.ExitCode, res.Decision, res.Reason, res.Path)
		}
		evs := f.events(res.RunID)
		if len(evs) != 1 || evs[0].Kind != audit.KindCommand || evs[0].Decision != "deny" || evs[0].Reason != c.reason {
			t.Errorf("%s %s: audit events %+v; want one command deny with the reason and no sandbox", c.tool, c.cmd, evs)
		}
	}
	// The allowed case of lab 1.4 is decided allow (pytest may not be
	// installed here, which is a setup error, not a gate decision).
	if d := f.enf.Decide(enforcer.Request{Tool: "run_tests", Command: "pytest", Args: []string{"-v"}}); !d.Allowed() {
		t.Errorf("pytest -v: %s", d)
	}
	f.verify(t)
}

// TestRunRecordsBeforeActing runs an allowed command and checks the order
// of the stream: the allow decision, the launch, the outcome, the
// teardown.
func TestRunRecordsBeforeActing(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	var out bytes.Buffer
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath,
		Args: []string{"payload", "echo", "hello", "from", "inside"}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || strings.TrimSpace(out.String()) != "hello from inside" {
		t.Fatalf("exit %d output %q", res.ExitCode, out.String())
	}
	var order []string
	for _, ev := range f.events(res.RunID) {
		order = append(order, string(ev.Kind)+":"+ev.Decision+":"+ev.Context.Event)
	}
	want := []string{"command:allow:", "lifecycle:info:sandbox_launched", "resource:info:", "lifecycle:info:sandbox_torn_down"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("events %q, want %q", order, want)
	}
	for _, k := range []string{"memory", "tasks", "seccomp", "landlock", "network", "namespaces", "command", "egress"} {
		if res.Receipt[k] == "" {
			t.Errorf("receipt has no mechanism for %q: %v", k, res.Receipt)
		}
	}
	f.verify(t)
}

// TestRunRefusedWhenDecisionNotRecorded closes the audit log before an
// allowed run: the decision cannot be made durable, so the command must not
// run, although the sandbox is built while the decision is being written.
func TestRunRefusedWhenDecisionNotRecorded(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	f.log.Close()
	var out bytes.Buffer
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath,
		Args: []string{"payload", "echo", "ran"}, Stdout: &out})
	if err == nil || !errors.Is(err, audit.ErrClosed) || res.ExitCode != enforcer.ExitSetup {
		t.Fatalf("Run with a closed log: exit %d, error %v; want %d and audit.ErrClosed", res.ExitCode, err, enforcer.ExitSetup)
	}
	if out.Len() != 0 {
		t.Fatalf("the command ran: %q", out.String())
	}
	testutil.CheckNoSandboxLeft(t, res.RunID)
}

// TestInfiniteLoopKilled is the lab's ASI09 criterion: a spinning payload
// is killed by a cap, with killedBy and exit 137.
func TestInfiniteLoopKilled(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "spin"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.KilledBy == nil || (*res.KilledBy != "cpu" && *res.KilledBy != "wall") || res.ExitCode != 137 {
		t.Fatalf("spin: killedBy %v exit %d", res.KilledBy, res.ExitCode)
	}
	evs := f.events(res.RunID)
	kill := evs[len(evs)-2]
	if kill.Kind != audit.KindResource || kill.Decision != audit.DecisionKill || kill.Context.KilledBy != *res.KilledBy {
		t.Fatalf("resource event %+v", kill)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"killedBy":"`+*res.KilledBy+`"`) {
		t.Fatalf("result JSON %s", b)
	}
}

// fakeResolver answers every name with the addresses in its map, and
// fails the test if asked for a name twice: the proxy must resolve once.
type fakeResolver struct {
	t     *testing.T
	mu    sync.Mutex
	asked map[string]int
	addrs map[string][]string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netipAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The proxy asks for fully qualified names ("name."): the table is
	// written without the dot.
	name, ok := strings.CutSuffix(host, ".")
	if !ok {
		r.t.Errorf("the proxy asked for %q, not fully qualified", host)
	}
	r.asked[name]++
	return parseAddrs(r.t, r.addrs[name]), nil
}

// TestLabEgressCasesFromInside runs the six cases of lab 3.3 from code
// inside the sandbox, through the proxy that is its only way out, and a
// rebinding attempt: an allowlisted name that resolves to the metadata
// address. Nothing is dialled (the dialer fails the test on any
// non-loopback address).
func TestLabEgressCasesFromInside(t *testing.T) {
	testutil.RequireRoot(t)
	res := &fakeResolver{t: t, asked: map[string]int{}, addrs: map[string][]string{
		"search.example-corp.net":     {"169.254.169.254"},
		"api.search.example-corp.net": {"127.0.0.1"},
	}}
	f := newFixture(t, res)
	for _, c := range []struct {
		task, url, decision, reason string
	}{
		{"web_search", "http://evil.attacker.example/", "deny", `host "evil.attacker.example:80" denied by default`},
		{"fetch_docs", "http://search.example-corp.net/", "deny", `task "fetch_docs": host "search.example-corp.net:80" denied by default`},
		{"install_deps", "http://registry.npmjs.org/", "deny", `host "registry.npmjs.org:80" denied by default`},
		{"web_search", "http://169.254.169.254/latest/meta-data/", "deny", "is always blocked"},
		{"any_task", "http://metadata.google.internal/", "deny", "is always blocked"},
		{"web_search", "http://0xA9FEA9FE/", "deny", "is always blocked"},
		// Allowed by name, then rebinding: the answer is the metadata address.
		{"web_search", "http://search.example-corp.net/", "deny", "always blocked"},
	} {
		var out, stderr bytes.Buffer
		r, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Task: c.task, Command: sandbox.SelfPath,
			Args: []string{"payload", "http-get", c.url}, Stdout: &out, Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		// Not silent: one stderr line as it happened, and the result's entry.
		if line := stderr.String(); !strings.HasPrefix(line, "airlock: egress: deny: ") || !strings.Contains(line, c.reason) || strings.Count(line, "\n") != 1 {
			t.Errorf("%s %s: stderr %q, want one egress refusal line", c.task, c.url, line)
		}
		if len(r.Egress) != 1 || r.Egress[0].Decision != "deny" || !strings.Contains(r.Egress[0].Reason, c.reason) {
			t.Errorf("%s %s: result's egress %+v", c.task, c.url, r.Egress)
		}
		checkResult(t, r)
		if !strings.HasPrefix(out.String(), "HTTP/1.1 403") {
			t.Errorf("%s %s: payload saw %q, want a 403", c.task, c.url, out.String())
		}
		var egress []audit.Event
		for _, ev := range f.events(r.RunID) {
			if ev.Kind == audit.KindEgress {
				egress = append(egress, ev)
			}
		}
		if len(egress) != 1 || egress[0].Decision != c.decision || !strings.Contains(egress[0].Reason, c.reason) || egress[0].Context.Task != c.task {
			t.Errorf("%s %s: egress events %+v; want one %s containing %q", c.task, c.url, egress, c.decision, c.reason)
		} else if x := egress[0].Context; x.Command != "" || x.Path != "" || x.Args != nil || x.Env != nil {
			t.Errorf("%s %s: egress event's context %+v names the command", c.task, c.url, x)
		}
	}
	if n := res.asked["search.example-corp.net"]; n != 1 {
		t.Errorf("search.example-corp.net resolved %d times, want once", n)
	}
	if len(f.dials) != 0 {
		t.Errorf("the proxy dialled %q", f.dials)
	}
	f.verify(t)
}

// TestNoDirectNetwork shows code that ignores the proxy variables has no
// network: the host's loopback listener is unreachable from inside. Two
// controls hold here: Landlock refuses a TCP connect to any port but the
// proxy's (EACCES), and behind it the empty network namespace has nothing
// listening (the sandbox package's tests show that one alone).
func TestNoDirectNetwork(t *testing.T) {
	testutil.RequireRoot(t)
	canary, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer canary.Close()
	f := newFixture(t, nil)
	var out bytes.Buffer
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath,
		Args: []string{"payload", "connect", canary.Addr().String()}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 1 || !strings.Contains(out.String(), "connect: permission denied") {
		t.Fatalf("exit %d: %q; want Landlock's refusal inside the sandbox", res.ExitCode, out.String())
	}
}

// TestConcurrentRunsShareOneLog runs several runs at once on one log
// file: the chain stays valid and every run's events are there.
func TestConcurrentRunsShareOneLog(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	var wg sync.WaitGroup
	ids := make([]string, 6)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "echo", "x"}}
			if i%2 == 1 {
				req = enforcer.Request{Tool: "run_tests", Command: "git", Args: []string{"clone", "x"}}
			}
			res, err := f.enf.Run(context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			ids[i] = res.RunID
		}()
	}
	wg.Wait()
	rep := f.verify(t)
	if rep.Lines < 1+3*4+3 {
		t.Fatalf("log has %d lines", rep.Lines)
	}
	for i, id := range ids {
		want := 4
		if i%2 == 1 {
			want = 1
		}
		if n := len(f.events(id)); n != want {
			t.Errorf("run %s has %d events, want %d", id, n, want)
		}
	}
}
