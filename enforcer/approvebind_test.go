package enforcer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// approvalStore is a real approval store in a private directory of the
// test's, hidden from every sandbox as the command line's is.
func approvalStore(t *testing.T) (*approval.Store, func(*enforcer.Options)) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := approval.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, func(o *enforcer.Options) { o.Approvals, o.Hide = st, append(o.Hide, dir) }
}

// pending is the one request of st that waits for an answer.
func pending(t *testing.T, st *approval.Store) approval.Request {
	t.Helper()
	list, err := st.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("pending requests: %+v, %v", list, err)
	}
	return list[0]
}

func sha256Of(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// refusedFor checks that res is an escalation refused because its
// approval was given for another value of the field named in says, and
// that nothing ran.
func refusedFor(t *testing.T, name string, res enforcer.Result, out *bytes.Buffer, says string) {
	t.Helper()
	if res.ExitCode != enforcer.ExitEscalated || res.Refusal == nil || res.Approval != nil || !strings.Contains(res.Refusal.Reason, "was given for "+says) {
		t.Errorf("%s: exit %d, refusal %+v, want one saying %q", name, res.ExitCode, res.Refusal, says)
	}
	if out.Len() != 0 {
		t.Errorf("%s: the command ran: %q", name, out.String())
	}
	out.Reset()
}

// TestRunApprovalBoundToWhatRuns: a run's approval is bound to all that
// decides what runs — the request shows the program and its digest, the
// environment, working directory, stdin, egress task and workspace — and
// a redemption that changes any of them is refused, naming it, without
// using the approval up. Before, an approval bound only the argv, tool and
// policy: `--env PATH=…`, `--cwd`, a stdin, another task or another
// workspace ran under it.
func TestRunApprovalBoundToWhatRuns(t *testing.T) {
	st, opt := approvalStore(t)
	f := newFixture(t, nil, opt)
	ctx := context.Background()
	var out bytes.Buffer
	res, _ := f.enf.Run(ctx, askReq(&out))
	if res.ExitCode != enforcer.ExitEscalated || res.Path != "" {
		t.Fatalf("escalation: %+v", res)
	}
	r := pending(t, st)
	self, err := os.ReadFile("/proc/self/exe") // what /.airlock/self binds
	if err != nil {
		t.Fatal(err)
	}
	if r.Program != sandbox.SelfPath || r.ProgramDigest != sha256Of(self) || len(r.Env) != 0 || r.Cwd != sandbox.WorkspaceDir ||
		r.Stdin != approval.StdinNone || r.StdinBytes != 0 || r.Task != "agent_code" || r.Workspace != "" || r.Image != "" {
		t.Fatalf("the request binds %+v", r)
	}
	for _, ev := range f.events(res.RunID) {
		if c := ev.Context; c.Event == enforcer.EventApprovalRequested &&
			(c.Path != r.Program || c.Details["programDigest"] != r.ProgramDigest || c.Details["cwd"] != r.Cwd || c.Details["stdin"] != r.Stdin) {
			t.Errorf("the request's audit record: %+v", c)
		}
	}
	if err := st.Answer(r.ID, approval.Answer{Allow: true, By: "operator"}); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, c := range []struct {
		name, says string
		edit       func(*enforcer.Request)
	}{
		{"--env PATH", `environment "(none)", not "'PATH=/tmp:/usr/bin:/bin'"`, func(q *enforcer.Request) { q.Env = []string{"PATH=/tmp:/usr/bin:/bin"} }},
		{"--cwd", `working directory "/workspace", not "/tmp"`, func(q *enforcer.Request) { q.Cwd = "/tmp" }},
		{"stdin", `stdin "none", not "` + sha256Of([]byte("planted\n")) + ` (8 bytes)"`, func(q *enforcer.Request) { q.Stdin = strings.NewReader("planted\n") }},
		{"--task", `egress task "agent_code", not "web_search"`, func(q *enforcer.Request) { q.Task = "web_search" }},
		{"--workspace", `workspace "(none)", not "` + ws + `"`, func(q *enforcer.Request) { q.Workspace = ws }},
	} {
		q := askReq(&out)
		q.Approval = r.ID
		c.edit(&q)
		res, _ := f.enf.Run(ctx, q)
		refusedFor(t, c.name, res, &out, c.says)
	}
	if os.Geteuid() != 0 {
		return // the approved run needs a sandbox
	}
	q := askReq(&out)
	q.Approval = r.ID
	if res, err := f.enf.Run(ctx, q); err != nil || res.ExitCode != 0 || res.Approval == nil || strings.TrimSpace(out.String()) != "ask ran" {
		t.Fatalf("the approved run, as shown: %+v %v %q", res, err, out.String())
	}
	f.verify(t)
}

// progPolicy escalates one program that a bind provides.
const progPolicy = `{"toolScopes": {"deploy": {"escalate": [{"name": "prog", "command": "/opt/airlock-test/prog", "allowExtraArgs": true}]}}}`

// TestRunApprovalBoundToProgramContents: the approval is bound to the
// program's contents when it was asked for: the same path holding
// another file is refused.
func TestRunApprovalBoundToProgramContents(t *testing.T) {
	st, opt := approvalStore(t)
	prog := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho deployed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, progPolicy, false, nil, opt, func(o *enforcer.Options) {
		o.Binds = append(o.Binds, sandbox.Bind{Host: prog, Inside: "/opt/airlock-test/prog"})
	})
	ctx := context.Background()
	var out bytes.Buffer
	req := enforcer.Request{Tool: "deploy", Command: "/opt/airlock-test/prog", Stdout: &out}
	if res, _ := f.enf.Run(ctx, req); res.ExitCode != enforcer.ExitEscalated {
		t.Fatalf("escalation: %+v", res)
	}
	r := pending(t, st)
	if r.Program != "/opt/airlock-test/prog" || r.ProgramDigest != sha256Of([]byte("#!/bin/sh\necho deployed\n")) {
		t.Fatalf("the request binds program %s (%s)", r.Program, r.ProgramDigest)
	}
	if err := st.Answer(r.ID, approval.Answer{Allow: true, By: "operator"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	req.Approval = r.ID
	res, _ := f.enf.Run(ctx, req)
	refusedFor(t, "rewritten program", res, &out, `program "/opt/airlock-test/prog (`+r.ProgramDigest+`)", not "/opt/airlock-test/prog (`+sha256Of([]byte("#!/bin/sh\necho planted\n"))+`)"`)
}

// deployPolicy lets the shell tool run sh -c, and escalates the deploy
// script and a shell that reads its commands from stdin.
const deployPolicy = `{"toolScopes": {"shell": {
  "allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
  "escalate": [{"name": "deploy", "command": "sh", "argPatterns": [["-c", "./deploy.sh"]]},
               {"name": "stdin-shell", "command": "sh", "argPatterns": [["-s"]]}]}}}`

// TestSessionApprovalBoundToWhatRuns is the review's case: an operator
// approves `sh -c ./deploy.sh` as shown; the agent, having planted a
// script and a `basename` of its own in the session, redeems it with --env
// PATH=…, with --cwd, or with a stdin: each is refused, naming what
// differs, and the approval still runs the command as shown, once. A
// stdin is bound by its digest: `sh -s` approved with one stdin does not
// run with another, and runs with its own, read as it was hashed.
func TestSessionApprovalBoundToWhatRuns(t *testing.T) {
	testutil.RequireRoot(t)
	st, opt := approvalStore(t)
	f := newFixtureWith(t, deployPolicy, false, nil, opt)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "deploy.sh"), []byte("#!/bin/sh\nbasename /srv/deployed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, f, enforcer.SessionRequest{Workspace: ws})
	ctx := context.Background()
	var out bytes.Buffer
	plant := shStep(`mkdir evil && printf '#!/bin/sh\necho planted\n' > evil/deploy.sh && cp evil/deploy.sh evil/basename && chmod +x evil/deploy.sh evil/basename`, &out)
	if res, err := s.Exec(ctx, plant); err != nil || res.ExitCode != 0 {
		t.Fatalf("planting: %+v %v %q", res, err, out.String())
	}
	out.Reset()
	if res, _ := s.Exec(ctx, shStep("./deploy.sh", &out)); res.ExitCode != enforcer.ExitEscalated {
		t.Fatalf("escalation: %+v", res)
	}
	r := pending(t, st)
	real, _ := filepath.EvalSymlinks(ws)
	if r.Cwd != "/workspace" || len(r.Env) != 0 || r.Stdin != approval.StdinNone || r.Workspace != real || r.Session != s.ID() {
		t.Fatalf("the request binds %+v", r)
	}
	if err := st.Answer(r.ID, approval.Answer{Allow: true, By: "operator"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, says string
		edit       func(*enforcer.StepRequest)
	}{
		{"--env PATH", `environment "(none)", not "'PATH=/workspace/evil:/usr/bin:/bin'"`, func(q *enforcer.StepRequest) { q.Env = []string{"PATH=/workspace/evil:/usr/bin:/bin"} }},
		{"--cwd", `working directory "/workspace", not "/workspace/evil"`, func(q *enforcer.StepRequest) { q.Cwd = "evil" }},
		{"stdin", `stdin "none", not "` + sha256Of([]byte("echo planted\n")) + ` (13 bytes)"`, func(q *enforcer.StepRequest) { q.Stdin = strings.NewReader("echo planted\n") }},
	} {
		q := shStep("./deploy.sh", &out)
		q.Approval = r.ID
		c.edit(&q)
		res, _ := s.Exec(ctx, q)
		refusedFor(t, c.name, res, &out, c.says)
	}
	q := shStep("./deploy.sh", &out)
	q.Approval = r.ID
	q.Stdin = strings.NewReader("") // an empty stdin is none
	if res, err := s.Exec(ctx, q); err != nil || res.ExitCode != 0 || out.String() != "deployed\n" {
		t.Fatalf("the approved step, as shown: %+v %v %q", res, err, out.String())
	}
	out.Reset()

	// A stdin given as bytes: bound by its digest, and what the command reads.
	stdinStep := func(script string) enforcer.StepRequest {
		return enforcer.StepRequest{Tool: "shell", Command: "sh", Args: []string{"-s"}, Stdin: strings.NewReader(script), Stdout: &out, Stderr: &out}
	}
	if res, _ := s.Exec(ctx, stdinStep("echo hello\n")); res.ExitCode != enforcer.ExitEscalated {
		t.Fatalf("escalation: %+v", res)
	}
	r = pending(t, st)
	if r.Stdin != sha256Of([]byte("echo hello\n")) || r.StdinBytes != 11 {
		t.Fatalf("the request binds stdin %s (%d bytes)", r.Stdin, r.StdinBytes)
	}
	if err := st.Answer(r.ID, approval.Answer{Allow: true, By: "operator"}); err != nil {
		t.Fatal(err)
	}
	q = stdinStep("echo planted\n")
	q.Approval = r.ID
	res, _ := s.Exec(ctx, q)
	refusedFor(t, "another stdin", res, &out, `stdin "`+r.Stdin+` (11 bytes)", not "`+sha256Of([]byte("echo planted\n"))+` (13 bytes)"`)
	q = stdinStep("echo hello\n")
	q.Approval = r.ID
	if res, err := s.Exec(ctx, q); err != nil || res.ExitCode != 0 || out.String() != "hello\n" {
		t.Fatalf("the approved stdin: %+v %v %q", res, err, out.String())
	}
	closeAll(t, s)
}

// TestApprovalStdinBounded: an escalated command's stdin over
// MaxApprovalStdin is not read into memory whole: the step is refused
// with why, and no request is made.
func TestApprovalStdinBounded(t *testing.T) {
	st, opt := approvalStore(t)
	f := newFixture(t, nil, opt)
	var out bytes.Buffer
	q := askReq(&out)
	q.Stdin = bytes.NewReader(make([]byte, enforcer.MaxApprovalStdin+1))
	res, err := f.enf.Run(context.Background(), q)
	if err == nil || res.ExitCode != enforcer.ExitSetup || !strings.Contains(res.Error, "its stdin has more than") {
		t.Fatalf("oversized stdin: %+v %v", res, err)
	}
	if list, _ := st.List(); len(list) != 0 {
		t.Errorf("a request was made: %+v", list)
	}
}

// TestApprovalNotRedeemedInAnotherSessionOfItsID: a session's id may be
// used again once it has ended; an approval given in the first session
// is bound to its workspace too, so a new session of that id over
// another workspace cannot redeem it.
func TestApprovalNotRedeemedInAnotherSessionOfItsID(t *testing.T) {
	testutil.RequireRoot(t)
	st, opt := approvalStore(t)
	f := newFixtureWith(t, deployPolicy, false, nil, opt)
	shown, planted := t.TempDir(), t.TempDir()
	for dir, script := range map[string]string{shown: "echo deployed", planted: "echo planted"} {
		if err := os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	var out bytes.Buffer
	first := openSession(t, f, enforcer.SessionRequest{ID: "ses-reused", Workspace: shown})
	if res, _ := first.Exec(ctx, shStep("./deploy.sh", &out)); res.ExitCode != enforcer.ExitEscalated {
		t.Fatalf("escalation: %+v", res)
	}
	r := pending(t, st)
	if err := st.Answer(r.ID, approval.Answer{Allow: true, By: "operator"}); err != nil {
		t.Fatal(err)
	}
	closeAll(t, first)
	second := openSession(t, f, enforcer.SessionRequest{ID: "ses-reused", Workspace: planted})
	q := shStep("./deploy.sh", &out)
	q.Approval = r.ID
	res, _ := second.Exec(ctx, q)
	real, _ := filepath.EvalSymlinks(planted)
	refusedFor(t, "another workspace", res, &out, `workspace "`+r.Workspace+`", not "`+real+`"`)
	closeAll(t, second)
}
