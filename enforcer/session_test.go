package enforcer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// shStep is a step of the shell tool: sh -c script.
func shStep(script string, out *bytes.Buffer) enforcer.StepRequest {
	return enforcer.StepRequest{Tool: "shell", Command: "sh", Args: []string{"-c", script}, Stdout: out, Stderr: out}
}

// openSession opens a session and closes it at cleanup.
func openSession(t *testing.T, f *fixture, req enforcer.SessionRequest) *enforcer.Session {
	t.Helper()
	s, err := f.enf.OpenSession(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// closeAll closes sessions and checks that nothing of any is left.
func closeAll(t *testing.T, sessions ...*enforcer.Session) {
	t.Helper()
	for _, s := range sessions {
		s.Close(context.Background())
	}
	for _, s := range sessions {
		testutil.CheckNoSandboxLeft(t, s.ID())
	}
}

// TestSessionSteps is the harness's case: state written by one command is
// there for the next (workspace and /tmp), the processes a step leaves
// are gone before the next, each step is decided against the tool that
// asks and recorded under the session's id and the step's number before
// it runs, refusals leave the session usable, and Close copies the
// findings out and leaves nothing behind.
func TestSessionSteps(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "requirements.txt"), []byte("left-pad==1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	findings := filepath.Join(t.TempDir(), "findings")
	s := openSession(t, f, enforcer.SessionRequest{Workspace: ws, Findings: findings})
	ctx := context.Background()
	var out bytes.Buffer
	step := func(st enforcer.StepRequest) enforcer.Result {
		t.Helper()
		out.Reset()
		res, err := s.Exec(ctx, st)
		if err != nil {
			t.Fatalf("step %+v: %v", st, err)
		}
		checkResult(t, res)
		return res
	}
	r1 := step(shStep(`cat requirements.txt > /tmp/installed; echo built > build.txt; sleep 1000 & echo $! > /tmp/pid`, &out))
	if r1.ExitCode != 0 || r1.Step != 1 || r1.Session != s.ID() || r1.RunID != s.ID() {
		t.Fatalf("step 1: %+v (%s)", r1, out.String())
	}
	r2 := step(shStep(`cat /tmp/installed; kill -0 $(cat /tmp/pid) 2>/dev/null && echo still-running; cat build.txt; echo found > /findings/report.txt`, &out))
	if r2.ExitCode != 0 || r2.Step != 2 || out.String() != "left-pad==1.0\nbuilt\n" {
		t.Fatalf("step 2: exit %d output %q", r2.ExitCode, out.String())
	}
	if r2.Receipt["session"] == "" || r2.Receipt["command"] == "" || r2.Receipt["seccomp"] == "" {
		t.Errorf("step receipt %v", r2.Receipt)
	}
	// Refused by the tool that asks: rm is the shell tool's deny rule
	// (exit 77, with its justification), the read_file tool may cat but
	// not run sh, and sudo is escalated with no approval path (75).
	den := step(enforcer.StepRequest{Tool: "shell", Command: "rm", Args: []string{"-rf", "."}})
	if den.ExitCode != enforcer.ExitDenied || den.Refusal.Justification != "use git to undo changes" || den.Step != 3 {
		t.Fatalf("denied step: %+v %+v", den, den.Refusal)
	}
	other := step(enforcer.StepRequest{Tool: "read_file", Command: "sh", Args: []string{"-c", "true"}})
	if other.ExitCode != enforcer.ExitDenied {
		t.Fatalf("sh for read_file: %+v", other)
	}
	esc := step(shStep("echo approved", &out))
	if esc.ExitCode != enforcer.ExitEscalated || esc.Refusal.Decision != "escalate" {
		t.Fatalf("escalated step: %+v %+v", esc, esc.Refusal)
	}
	cat := step(enforcer.StepRequest{Tool: "read_file", Command: "cat", Args: []string{"build.txt"}, Stdout: &out})
	if cat.ExitCode != 0 || out.String() != "built\n" || cat.Step != 6 {
		t.Fatalf("cat after refusals: %+v %q", cat, out.String())
	}
	sum, err := s.Close(ctx)
	if err != nil || sum.Steps != 6 || sum.Ended != enforcer.EndedClosed {
		t.Fatalf("close: %+v %v", sum, err)
	}
	if b, err := os.ReadFile(filepath.Join(findings, "report.txt")); err != nil || string(b) != "found\n" {
		t.Errorf("findings: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "build.txt")); b != nil {
		t.Error("the session wrote into the host's workspace")
	}
	if _, err := s.Exec(ctx, shStep("true", &out)); !errors.Is(err, enforcer.ErrSessionEnded) {
		t.Errorf("Exec after Close: %v", err)
	}
	closeAll(t, s)

	// The stream: one launch, each step's decision before its outcome,
	// under the session's id and the step's number, one teardown.
	var got []string
	for _, ev := range f.events(s.ID()) {
		got = append(got, ev.Context.Details["step"]+":"+string(ev.Kind)+":"+ev.Decision+":"+ev.Context.Event)
	}
	want := []string{":lifecycle:info:sandbox_launched",
		"1:command:allow:", "1:resource:info:",
		"2:command:allow:", "2:resource:info:",
		"3:command:deny:", "4:command:deny:", "5:command:escalate:",
		"6:command:allow:", "6:resource:info:",
		":lifecycle:info:sandbox_torn_down"}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	f.verify(t)
}

// TestSessionStepCapsAndEgress: a step's tool caps and Timeout hold for
// that step alone, and an egress refusal during a step is one stderr line
// as it happens and an entry of the step's result.
func TestSessionStepCapsAndEgress(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixtureWith(t, testPolicy, true, nil)
	s := openSession(t, f, enforcer.SessionRequest{Task: "web_search"})
	ctx := context.Background()
	var out, notices bytes.Buffer
	res, err := s.Exec(ctx, enforcer.StepRequest{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "sleep"},
		Timeout: 300 * time.Millisecond, Stdout: &out})
	if err != nil || res.KilledBy == nil || *res.KilledBy != "wall" || res.ExitCode != 137 || !strings.Contains(res.KillReason, "wallSeconds 0.3") {
		t.Fatalf("timeout step: %+v %v", res, err)
	}
	res, err = s.Exec(ctx, enforcer.StepRequest{Tool: "agent_code", Command: sandbox.SelfPath,
		Args: []string{"payload", "http-get", "http://metadata.google.internal/computeMetadata/v1/"}, Stdout: &out, Notices: &notices})
	if err != nil || len(res.Egress) != 1 || res.Egress[0].Decision != "deny" || res.Egress[0].Host != "metadata.google.internal" {
		t.Fatalf("egress step: %+v %v (%s)", res.Egress, err, out.String())
	}
	checkResult(t, res)
	if line := notices.String(); !strings.HasPrefix(line, "airlock: egress: deny: ") || strings.Count(line, "\n") != 1 {
		t.Errorf("notices %q", line)
	}
	if !slices.ContainsFunc(res.Alerts, func(a enforcer.Alert) bool { return a.Alert == "metadata_access" }) {
		t.Errorf("alerts %+v", res.Alerts)
	}
	// The session goes on after both.
	out.Reset()
	if res, err := s.Exec(ctx, enforcer.StepRequest{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "echo", "ok"}, Stdout: &out}); err != nil ||
		res.ExitCode != 0 || out.String() != "ok\n" || len(res.Egress) != 0 {
		t.Fatalf("after: %+v %v %q", res, err, out.String())
	}
	closeAll(t, s)
}

// TestSessionTimeouts: a session ends on its idle timeout, and its wall
// clock kills a step in flight; either way it is torn down, recorded, and
// leaves nothing behind.
func TestSessionTimeouts(t *testing.T) {
	testutil.RequireRoot(t)
	pol := strings.Replace(testPolicy, `"egress": {`, `"session": {"wallSeconds": 1, "idleSeconds": 0.3}, "egress": {`, 1)
	f := newFixtureWith(t, pol, false, nil)
	idle := openSession(t, f, enforcer.SessionRequest{})
	select {
	case <-idle.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the idle session did not end")
	}
	if sum, _ := idle.Summary(); sum.Ended != enforcer.EndedIdle {
		t.Errorf("idle summary %+v", sum)
	}
	closeAll(t, idle)

	busy := openSession(t, f, enforcer.SessionRequest{})
	res, err := busy.Exec(context.Background(), enforcer.StepRequest{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "sleep"}})
	if err != nil || res.KilledBy == nil || *res.KilledBy != enforcer.KilledBySession || res.ExitCode != 137 {
		t.Fatalf("step at the session's wall clock: %+v %v", res, err)
	}
	checkResult(t, res)
	<-busy.Done()
	if sum, _ := busy.Summary(); sum.Ended != enforcer.EndedWall {
		t.Errorf("wall summary %+v", sum)
	}
	closeAll(t, busy)
	var ends []string
	for _, ev := range f.seen {
		if ev.Context.Event == audit.EventSandboxTornDown {
			ends = append(ends, ev.Reason)
		}
	}
	if len(ends) != 2 || !strings.Contains(ends[0], "no command for idleSeconds 0.3") || !strings.Contains(ends[1], "wall clock passed wallSeconds 1") {
		t.Errorf("teardown records %q", ends)
	}
}

// TestSessionChanges: Changes hands back what the sandbox session's diff
// computes, with the policy's changes.exclude, between steps, and fails
// once the session has ended.
func TestSessionChanges(t *testing.T) {
	testutil.RequireRoot(t)
	var calls int
	var excluded []string
	defer enforcer.SetWorkspaceChanges(func(_ *sandbox.Session, exclude []string) (enforcer.Changes, error) {
		calls++
		excluded = exclude
		return enforcer.Changes{Patch: []byte("diff --git a/x b/x\n"), Files: []changes.FileChange{{Path: "x", Kind: changes.Added}}}, nil
	})()
	f := newFixtureWith(t, strings.Replace(testPolicy, "{", `{"changes": {"exclude": ["node_modules/", "*.pyc"]},`, 1), false, nil)
	s := openSession(t, f, enforcer.SessionRequest{})
	c, err := s.Changes()
	if err != nil || len(c.Files) != 1 || calls != 1 {
		t.Fatalf("changes %+v %v", c, err)
	}
	if !slices.Equal(excluded, []string{"node_modules/", "*.pyc"}) {
		t.Errorf("the diff was given %q to exclude, want the policy's changes.exclude", excluded)
	}
	closeAll(t, s)
	if _, err := s.Changes(); !errors.Is(err, enforcer.ErrSessionEnded) {
		t.Errorf("changes after close: %v", err)
	}
}

// TestSessionApprovalBoundToSession: an approval given in one session
// cannot be redeemed in another, and runs its command once in its own.
func TestSessionApprovalBoundToSession(t *testing.T) {
	testutil.RequireRoot(t)
	store := newMemStore()
	f := newFixture(t, nil, func(o *enforcer.Options) { o.Approvals = store })
	a, b := openSession(t, f, enforcer.SessionRequest{}), openSession(t, f, enforcer.SessionRequest{})
	ctx := context.Background()
	var out bytes.Buffer
	res, err := a.Exec(ctx, shStep("echo approved", &out))
	if err != nil || res.ExitCode != enforcer.ExitEscalated || res.Refusal.Approval == nil || res.Refusal.Approval.ID == "" {
		t.Fatalf("escalated: %+v %v", res, err)
	}
	id := res.Refusal.Approval.ID
	if err := store.Answer(id, approvalAllow()); err != nil {
		t.Fatal(err)
	}
	st := shStep("echo approved", &out)
	st.Approval = id
	if res, _ := b.Exec(ctx, st); res.ExitCode != enforcer.ExitEscalated || !strings.Contains(res.Refusal.Reason, "was given for session") {
		t.Fatalf("redeemed in another session: %+v %+v", res, res.Refusal)
	}
	out.Reset()
	res, err = a.Exec(ctx, st)
	if err != nil || res.Approval == nil || res.Approval.ID != id || res.ExitCode != 0 || out.String() != "approved\n" {
		t.Fatalf("redeemed in its session: %+v %v %q", res, err, out.String())
	}
	if res, _ := a.Exec(ctx, st); res.ExitCode != enforcer.ExitEscalated || !strings.Contains(res.Refusal.Reason, "already used") {
		t.Fatalf("replayed: %+v %+v", res, res.Refusal)
	}
	closeAll(t, a, b)
}

// TestSessionCloseEndsAnApproversWait: closing a session while an
// approver is still deciding one of its steps does not wait for the
// approver, and the step does not run.
func TestSessionCloseEndsAnApproversWait(t *testing.T) {
	testutil.RequireRoot(t)
	asked := make(chan struct{})
	f := newFixture(t, nil, func(o *enforcer.Options) {
		o.Approver = approval.ApproverFunc(func(ctx context.Context, r approval.Request) (approval.Answer, error) {
			close(asked)
			<-ctx.Done()
			return approval.Answer{}, ctx.Err()
		})
	})
	s := openSession(t, f, enforcer.SessionRequest{})
	var out bytes.Buffer
	done := make(chan enforcer.Result, 1)
	go func() {
		res, _ := s.Exec(context.Background(), shStep("echo approved", &out))
		done <- res
	}()
	<-asked
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Close(ctx); err != nil {
		t.Fatalf("Close waited for the approver: %v", err)
	}
	res := <-done
	if res.ExitCode != enforcer.ExitEscalated || out.Len() != 0 || !strings.Contains(res.Refusal.Reason, "gave no answer") {
		t.Fatalf("step: %+v %+v %q", res, res.Refusal, out.String())
	}
	closeAll(t, s)
}

// TestWorkspaceHoldingAHiddenPath: a workspace that holds a path no
// sandbox may see (an approval store, through a link too) is refused by
// Run and OpenSession before anything is copied in.
func TestWorkspaceHoldingAHiddenPath(t *testing.T) {
	ws := t.TempDir()
	store := filepath.Join(ws, ".local", "state", "airlock", "approvals")
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "ws-link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil, func(o *enforcer.Options) { o.Hide = []string{store} })
	for _, w := range []string{ws, link, filepath.Join(ws, ".local")} {
		res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "read_file", Command: "cat", Args: []string{"x"}, Workspace: w})
		if err == nil || res.ExitCode != enforcer.ExitSetup || !strings.Contains(res.Error, "which no sandbox may see") {
			t.Errorf("run with workspace %s: exit %d, %v", w, res.ExitCode, err)
		}
		if s, err := f.enf.OpenSession(context.Background(), enforcer.SessionRequest{Workspace: w}); err == nil || !strings.Contains(err.Error(), "which no sandbox may see") {
			if s != nil {
				s.Close(context.Background())
			}
			t.Errorf("session with workspace %s: %v", w, err)
		}
	}
	// A workspace beside it is fine.
	other := t.TempDir()
	if s, err := f.enf.OpenSession(context.Background(), enforcer.SessionRequest{Workspace: other}); err == nil {
		closeAll(t, s)
	} else if os.Geteuid() == 0 {
		t.Errorf("session with workspace %s: %v", other, err)
	}
}

// TestWorkspaceHoldingTheAuditLog: a workspace that holds the audit log's
// directory (its tree and run claims, and beside them, by default, the
// signing key's) is refused though Options.Hide names nothing: a copy of
// the workspace would hand them to the sandbox.
func TestWorkspaceHoldingTheAuditLog(t *testing.T) {
	f := newFixture(t, nil)
	ws := filepath.Dir(f.path)
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "read_file", Command: "cat", Args: []string{"x"}, Workspace: ws})
	if err == nil || res.ExitCode != enforcer.ExitSetup || !strings.Contains(res.Error, "which no sandbox may see") {
		t.Errorf("run with the log's directory as workspace: exit %d, %v", res.ExitCode, err)
	}
}

// TestSessionStepRefusedWhenDecisionNotRecorded closes the audit log
// under a live session: a step's decision cannot be made durable, so the
// step must not run, although its pipes and counters are made while the
// decision is being written.
func TestSessionStepRefusedWhenDecisionNotRecorded(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	s := openSession(t, f, enforcer.SessionRequest{})
	f.log.Close()
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), shStep("echo ran; echo ran > /tmp/ran", &out))
	if err == nil || !errors.Is(err, audit.ErrClosed) || res.ExitCode != enforcer.ExitSetup {
		t.Fatalf("a step with a closed log: exit %d, error %v; want %d and audit.ErrClosed", res.ExitCode, err, enforcer.ExitSetup)
	}
	if out.Len() != 0 {
		t.Fatalf("the step ran: %q", out.String())
	}
}

// TestReadWriteHoldingTheAuditLog: a policy whose readWrite binds the
// audit log's directory writable is refused by Run and OpenSession: the
// sandbox could plant the checkpoint's temporary file or the runs
// directory as links, which airlock (root) would write or sweep through,
// or rename the directory and leave a log of its own in its place.
func TestReadWriteHoldingTheAuditLog(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "airlock-rw-") // outside /tmp, which the sandbox makes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pol := strings.Replace(testPolicy, `"egress": {`, `"filesystem": {"readWrite": ["`+dir+`"]}, "egress": {`, 1)
	f := newFixtureIn(t, dir, pol, nil)
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "read_file", Command: "cat", Args: []string{"x"}})
	if err == nil || res.ExitCode != enforcer.ExitSetup || !strings.Contains(res.Error, "holds") {
		t.Errorf("run: exit %d, %v", res.ExitCode, err)
	}
	if s, err := f.enf.OpenSession(context.Background(), enforcer.SessionRequest{}); err == nil || !strings.Contains(err.Error(), "holds") {
		if s != nil {
			s.Close(context.Background())
		}
		t.Errorf("session: %v", err)
	}
}

// TestSessionStepToolCaps: a step runs under its tool's memoryMb and
// processCount, not only the session's: agent_code's 128 MiB kills a
// memory bomb in its own group (its peak stays near 128 MiB, under the
// session's 512), the shell tool's 20 processes stop a fork bomb the
// session's 64 would let through; each result says killedBy and how the
// caps held, and the session goes on.
func TestSessionStepToolCaps(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixtureWith(t, strings.Replace(testPolicy, "{", `{"session": {"memoryMb": 512},`, 1), false, nil)
	s := openSession(t, f, enforcer.SessionRequest{})
	ctx := context.Background()
	var out bytes.Buffer
	res, err := s.Exec(ctx, enforcer.StepRequest{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "membomb"}, Stdout: &out, Stderr: &out})
	if err != nil || res.KilledBy == nil || *res.KilledBy != "memory" || res.ExitCode != 137 {
		t.Fatalf("memory bomb: %+v %v (%s)", res, err, out.String())
	}
	if res.PeakMemoryBytes > 129<<20 {
		t.Errorf("memory bomb's peak %d bytes, want about agent_code's memoryMb 128 (the session's is 512)", res.PeakMemoryBytes)
	}
	checkResult(t, res)
	if r := res.Receipt["memory"]; !strings.HasPrefix(r, "per step: cgroup v1 memory.limit_in_bytes of the step's own group (134217728 bytes)") {
		t.Errorf("receipt memory %q", r)
	}
	out.Reset()
	res, err = s.Exec(ctx, shStep(`i=0; while [ $i -lt 40 ]; do sleep 2 & i=$((i+1)); done; wait`, &out))
	if err != nil || res.KilledBy == nil || *res.KilledBy != "pids" || res.ExitCode != 137 {
		t.Fatalf("fork bomb: %+v %v (%s)", res, err, out.String())
	}
	if r := res.Receipt["tasks"]; !strings.HasPrefix(r, "per step: cgroup v1 pids.max of the step's own group (20)") {
		t.Errorf("receipt tasks %q", r)
	}
	out.Reset()
	if res, err := s.Exec(ctx, enforcer.StepRequest{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "echo", "ok"}, Stdout: &out}); err != nil ||
		res.ExitCode != 0 || out.String() != "ok\n" {
		t.Fatalf("after: %+v %v %q", res, err, out.String())
	}
	closeAll(t, s)
}
