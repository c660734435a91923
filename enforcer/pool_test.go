package enforcer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// newPool starts a pool of size n for f and closes it at cleanup, then
// checks that none of its sandboxes is left.
func newPool(t *testing.T, f *fixture, req enforcer.PoolRequest) *enforcer.Pool {
	t.Helper()
	p, err := f.enf.NewPool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		testutil.CheckNoSandboxLeft(t, ownPools)
	})
	return p
}

// closeWithPool closes the sessions and the pool, and checks that nothing
// of any is left.
func closeWithPool(t *testing.T, p *enforcer.Pool, sessions ...*enforcer.Session) {
	t.Helper()
	for _, s := range sessions {
		s.Close(context.Background())
	}
	p.Close()
	for _, s := range sessions {
		testutil.CheckNoSandboxLeft(t, s.ID())
	}
	testutil.CheckNoSandboxLeft(t, ownPools)
}

// poolGroups counts the cgroups of pooled sandboxes in one hierarchy.
// ownPools begins the cgroup names of this test process's pooled
// sandboxes (other test binaries may build pools at the same time).
var ownPools = "sandbox-" + enforcer.PoolSandboxPrefix(os.Getpid())

func poolGroups(t *testing.T) int {
	t.Helper()
	var dir string
	for _, d := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			dir = d
			break
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*", "*"+ownPools+"*"))
	top, _ := filepath.Glob(filepath.Join(dir, "*"+ownPools+"*"))
	return len(names) + len(top)
}

// waitReady waits until the pool has n sandboxes built.
func waitReady(t *testing.T, p *enforcer.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for p.Ready() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the pool has %d sandboxes ready, not %d, after 20s (last build: %v)", p.Ready(), n, p.Err())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPoolFresh opens two sessions, one after the other, on sandboxes a
// pool built ahead, the second built while the first was in use: nothing
// of the first is visible to the second — its files in /tmp and
// /workspace, the process it left running, its workspace, its proxy's
// refusals, its canary, its audit context — and each gets its own
// workspace, copied in when it was handed out.
func TestPoolFresh(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	p := newPool(t, f, enforcer.PoolRequest{Size: 1})
	ctx := context.Background()
	waitReady(t, p, 1)

	ws1, ws2 := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws1, "first.txt"), []byte("first\n"), 0o644)
	os.WriteFile(filepath.Join(ws2, "second.txt"), []byte("second\n"), 0o644)
	s1, err := p.OpenSession(ctx, enforcer.SessionRequest{Workspace: ws1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s1.Close(ctx) })
	if !s1.BuiltAhead() {
		t.Fatal("the first session's sandbox was not the pool's")
	}
	var out bytes.Buffer
	step := func(s *enforcer.Session, st enforcer.StepRequest) enforcer.Result {
		t.Helper()
		out.Reset()
		st.Stdout, st.Stderr = &out, &out
		res, err := s.Exec(ctx, st)
		if err != nil {
			t.Fatalf("step %v: %v (%s)", st.Args, err, out.String())
		}
		return res
	}
	r := step(s1, shStep(`cat first.txt; echo one > /tmp/mark; echo one > /workspace/mark; sleep 1000 & echo $! > /tmp/pid`, &out))
	if r.ExitCode != 0 || out.String() != "first\n" {
		t.Fatalf("first session's step: %+v (%q)", r, out.String())
	}
	r = step(s1, enforcer.StepRequest{Tool: "agent_code", Command: sandbox.SelfPath,
		Args: []string{"payload", "http-get", "http://not-allowed.example-corp.net/"}})
	if len(r.Egress) == 0 || r.Egress[0].Decision != "deny" {
		t.Fatalf("the first session's proxy did not refuse: %+v", r.Egress)
	}
	waitReady(t, p, 1) // built while the first session is in use

	s2, err := p.OpenSession(ctx, enforcer.SessionRequest{Workspace: ws2})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(ctx)
	if !s2.BuiltAhead() {
		t.Fatal("the second session's sandbox was not the pool's")
	}
	r = step(s2, shStep(`cat second.txt; ls -A /tmp /workspace; for p in /proc/[0-9]*; do cat $p/comm; done`, &out))
	got := out.String()
	if r.ExitCode != 0 || r.Step != 1 || !strings.HasPrefix(got, "second\n") {
		t.Fatalf("second session's step: %+v (%q)", r, got)
	}
	for _, leaked := range []string{"first.txt", "mark", "pid", "sleep"} {
		if strings.Contains(got, leaked) {
			t.Errorf("the second session sees %q of the first: %q", leaked, got)
		}
	}
	if len(r.Egress) != 0 {
		t.Errorf("the second session's result has the first's egress decisions: %+v", r.Egress)
	}
	if a, b := enforcer.CanaryAddr(s1), enforcer.CanaryAddr(s2); a == b || a == "" {
		t.Errorf("the sessions share a canary: %q %q", a, b)
	}
	closeWithPool(t, p, s1, s2)
	// Each session's records carry its own id only, from its own start.
	for _, s := range []*enforcer.Session{s1, s2} {
		evs := f.events(s.ID())
		if len(evs) == 0 || evs[0].Context.Event != audit.EventSandboxLaunched || !strings.Contains(evs[0].Reason, "built ahead") {
			t.Fatalf("session %s's first record: %+v", s.ID(), evs)
		}
	}
	for _, ev := range f.events(s2.ID()) {
		if strings.Contains(ev.Reason, s1.ID()) || ev.Context.Details["step"] > "1" {
			t.Errorf("the second session's record carries the first's context: %+v", ev)
		}
	}
	f.verify(t)
}

// TestPoolFallsBack opens a session for another task than the pool's, and
// one when the pool has none ready: both are opened as OpenSession does,
// and the pool's sandboxes are left for the sessions they were built for.
func TestPoolFallsBack(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	p := newPool(t, f, enforcer.PoolRequest{Size: 1, Task: "web_search"})
	ctx := context.Background()
	waitReady(t, p, 1)
	other, err := p.OpenSession(ctx, enforcer.SessionRequest{Task: "fetch_docs"})
	if err != nil {
		t.Fatal(err)
	}
	if other.BuiltAhead() || p.Ready() != 1 {
		t.Fatalf("a session for another task took the pool's sandbox (ready %d)", p.Ready())
	}
	warm, err := p.OpenSession(ctx, enforcer.SessionRequest{Task: "web_search"})
	if err != nil {
		t.Fatal(err)
	}
	cold, err := p.OpenSession(ctx, enforcer.SessionRequest{Task: "web_search"})
	if err != nil {
		t.Fatal(err)
	}
	if !warm.BuiltAhead() || cold.BuiltAhead() {
		t.Fatalf("built ahead: %v then %v, want true then false", warm.BuiltAhead(), cold.BuiltAhead())
	}
	closeWithPool(t, p, other, warm, cold)
}

// TestPoolClose tears down the sandboxes not handed out and leaves the
// sessions opened from the pool running.
func TestPoolClose(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	p, err := f.enf.NewPool(context.Background(), enforcer.PoolRequest{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, p, 2)
	ctx := context.Background()
	s, err := p.OpenSession(ctx, enforcer.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if n := poolGroups(t); n != 1 {
		t.Fatalf("%d cgroups of pooled sandboxes after the pool's close, want the session's one", n)
	}
	var out bytes.Buffer
	if r, err := s.Exec(ctx, shStep("echo alive", &out)); err != nil || r.ExitCode != 0 || out.String() != "alive\n" {
		t.Fatalf("the session after the pool's close: %+v %v %q", r, err, out.String())
	}
	closeAll(t, s)
	testutil.CheckNoSandboxLeft(t, ownPools)
	if _, err := f.enf.NewPool(ctx, enforcer.PoolRequest{Size: enforcer.MaxPool + 1}); err == nil {
		t.Fatal("a pool over MaxPool was made")
	}
}

// TestPoolRefills: the pool builds another sandbox after each hand-out,
// once the session's first step has run, and also for a session that runs
// none.
func TestPoolRefills(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	p := newPool(t, f, enforcer.PoolRequest{Size: 1})
	ctx := context.Background()
	waitReady(t, p, 1)
	idle, err := p.OpenSession(ctx, enforcer.SessionRequest{})
	if err != nil || !idle.BuiltAhead() {
		t.Fatalf("first hand-out: %v", err)
	}
	waitReady(t, p, 1) // with no step run
	busy, err := p.OpenSession(ctx, enforcer.SessionRequest{})
	if err != nil || !busy.BuiltAhead() {
		t.Fatalf("second hand-out: %v", err)
	}
	var out bytes.Buffer
	if res, err := busy.Exec(ctx, shStep("true", &out)); err != nil || res.ExitCode != 0 {
		t.Fatalf("step: %v %+v", err, res)
	}
	waitReady(t, p, 1)
	closeWithPool(t, p, idle, busy)
}
