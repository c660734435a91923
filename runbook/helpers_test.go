package runbook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain makes the test binary a sandbox init when re-executed as one,
// and airlock's payloads when a plan runs it inside a sandbox as
// "/.airlock/self payload NAME ARGS".
func TestMain(m *testing.M) {
	sandbox.Init()
	if len(os.Args) > 2 && os.Args[1] == "payload" {
		if os.Args[2] == "probe-bench" {
			os.Exit(probeBench(os.Args[3:]))
		}
		os.Exit(payload.Run(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// testPolicy lets tool "t" run the test binary's payloads, a shell and
// cat, with caps small enough for tests; tool "web" has an allowlist.
const testPolicy = `{
  "toolScopes": {
    "t": {"allow": [
      {"name": "self", "command": "/.airlock/self", "argPatterns": [["payload"]], "allowExtraArgs": true},
      {"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true},
      {"name": "cat", "command": "cat", "argPatterns": [], "allowExtraArgs": true}
    ],
    "deny": [{"name": "no-rm", "command": "rm", "argPatterns": [], "allowExtraArgs": true}]},
    "other": {"allow": [{"name": "true", "command": "true"}]}
  },
  "caps": {"wallSeconds": 20, "cpuSeconds": 10, "memoryMb": 256, "processCount": 64},
  "egress": {"default": "deny", "taskAllowlist": {"t": ["upstream.test"]}}
}`

func loadTestPolicy(t testing.TB) *policy.Loaded {
	t.Helper()
	pol, err := policy.Parse("test-policy.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// env is one test's launch setup: the enforcer's policy, log and
// options, the launch's, and where things go.
type env struct {
	pol       *policy.Loaded
	log       *audit.Log
	eopts     enforcer.Options
	opts      runbook.Options
	dir       string // the test's directory
	auditPath string
	findings  string
	workspace string
	evidence  string
	tampered  bool // the test edited the audit log: it no longer verifies
}

// newEnv makes the setup of a test launch: the test policy, an audit
// log, a workspace and a findings directory in the test's directory,
// airlock's own test binary bound at /.airlock/self, and an egress proxy
// that can dial only loopback and resolve nothing.
func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{dir: dir, auditPath: filepath.Join(dir, "audit.jsonl"), findings: filepath.Join(dir, "findings"),
		workspace: filepath.Join(dir, "ws"), evidence: filepath.Join(dir, "evidence")}
	if err := os.Mkdir(e.workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workspace, "input.txt"), []byte("input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(e.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	var self sandbox.Config
	self.BindSelf()
	e.pol, e.log = loadTestPolicy(t), log
	e.eopts = enforcer.Options{Binds: self.Binds, Dialer: proxy.DialerFunc(testutil.StandInDialer(t)), Resolver: noResolver{t}}
	e.opts = runbook.Options{
		Workspace:   e.workspace,
		Findings:    e.findings,
		EvidenceDir: e.evidence,
		RunID:       "rb-" + strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()),
	}
	if len(e.opts.RunID) > 40 {
		e.opts.RunID = e.opts.RunID[:40]
	}
	e.opts.RunID += "-" + itoa(os.Getpid())
	return e
}

// launch launches p with e's enforcer, as airlock launch does.
func (e *env) launch(t *testing.T, ctx context.Context, p *runbook.Plan) (runbook.Result, error) {
	t.Helper()
	enf, err := enforcer.New(e.pol, e.log, e.eopts)
	if err != nil {
		t.Fatal(err)
	}
	return runbook.Launch(ctx, enf, p, e.opts)
}

// noResolver fails the test on any name lookup but of upstream.test, the
// host's loopback (through its stand-in, testutil.StandIn): no query may
// leave the host.
type noResolver struct{ t testing.TB }

func (r noResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "upstream.test." {
		return []netip.Addr{testutil.StandIn(netip.MustParseAddr("127.0.0.1"))}, nil
	}
	r.t.Errorf("test resolved %q", host)
	return nil, errors.New("test: no resolution")
}

// plan builds a plan of tool "t" steps.
func plan(id string, steps ...runbook.Step) *runbook.Plan {
	for i := range steps {
		if steps[i].Tool == "" {
			steps[i].Tool = "t"
		}
	}
	return &runbook.Plan{TestID: id, Steps: steps}
}

func sh(name, script string) runbook.Step {
	return runbook.Step{Name: name, Command: "sh", Args: []string{"-c", script}}
}

func self(name string, args ...string) runbook.Step {
	return runbook.Step{Name: name, Command: sandbox.SelfPath, Args: append([]string{"payload"}, args...)}
}

// events reads the test's audit log, checking its chain.
func (e *env) events(t *testing.T) []audit.Event {
	t.Helper()
	data, err := os.ReadFile(e.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(bytes.NewReader(data)); err != nil && !e.tampered {
		t.Fatalf("audit log does not verify: %v", err)
	} else if err == nil && e.tampered {
		t.Fatal("the tampered audit log verifies")
	}
	var evs []audit.Event
	for ev, err := range audit.Events(bytes.NewReader(data)) {
		if err != nil && e.tampered {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// lifecycle returns the lifecycle events named name.
func lifecycle(evs []audit.Event, name string) []audit.Event {
	var out []audit.Event
	for _, ev := range evs {
		if ev.Kind == audit.KindLifecycle && ev.Context.Event == name {
			out = append(out, ev)
		}
	}
	return out
}

func ofKind(evs []audit.Event, k audit.Kind) []audit.Event {
	var out []audit.Event
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func parsePolicy(t testing.TB, src string) *policy.Loaded {
	t.Helper()
	pol, err := policy.Parse("test-policy.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// probeBench is a test-only payload: "probe-bench N FILE ADDR" runs the
// start-up probes N times in this process, inside the sandbox, and
// prints the mean time of one run in nanoseconds and whether they all
// passed.
func probeBench(args []string) int {
	if len(args) != 3 {
		return 3
	}
	n, _ := strconv.Atoi(args[0])
	req := sandbox.ProbeRequest{CanaryFile: args[1], CanaryAddr: args[2]}
	var failed []sandbox.ProbeResult
	start := time.Now()
	for range n {
		failed = append(failed, sandbox.ProbesFailed(sandbox.Probe(req))...)
	}
	fmt.Printf("%d %d\n", time.Since(start).Nanoseconds()/int64(max(n, 1)), len(failed))
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "failed probes: %+v\n", failed[0])
	}
	return 0
}
