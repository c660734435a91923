package runbook_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/runbook"
)

// TestLaunchPlan runs a plan end to end: state carried from step to step
// in one workspace, findings persisted out, a failure allowed by
// continueOnFailure, every decision and outcome in the audit stream, and
// a teardown that leaves nothing on the host.
func TestLaunchPlan(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	var tr tracker
	tr.track(&e.opts, nil)
	p := plan("T-plan",
		sh("write", "cat input.txt > copy.txt; echo report > /findings/report.txt; mkdir /findings/sub; echo deep > /findings/sub/f"),
		sh("read", "cat /workspace/copy.txt; test ! -e /tmp/x && echo $$ > /tmp/x"),
		runbook.Step{Name: "allowed-failure", Command: "sh", Args: []string{"-c", "exit 3"}, ContinueOnFailure: true},
		self("payload", "hello"),
	)
	res, err := e.launch(t, context.Background(), p)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitOK || res.Outcome != runbook.OutcomePassed || res.Untrusted {
		t.Fatalf("result %+v", res)
	}
	want := []string{runbook.StepPassed, runbook.StepPassed, runbook.StepFailed, runbook.StepPassed}
	for i, s := range res.Steps {
		if s.Status != want[i] {
			t.Errorf("step %d: status %q, want %q (%+v)", i+1, s.Status, want[i], s)
		}
	}
	if c := res.Steps[2].ExitCode; c == nil || *c != 3 {
		t.Errorf("step 3 exit code %v, want 3", c)
	}
	if res.Reason != "every step of the plan ran: 3 passed, 1 failed with continueOnFailure" {
		t.Errorf("reason %q", res.Reason)
	}
	for f, body := range map[string]string{"report.txt": "report\n", "sub/f": "deep\n"} {
		b, err := os.ReadFile(filepath.Join(e.findings, f))
		if err != nil || string(b) != body {
			t.Errorf("finding %s: %q, %v", f, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(e.findings, runbook.UntrustedMarker)); err == nil {
		t.Error("findings of a clean run are marked untrusted")
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "copy.txt")); err == nil {
		t.Error("the step wrote into the host's workspace: it must get a copy")
	}
	evs := e.events(t)
	if n := len(ofKind(evs, audit.KindCommand)); n != 4 {
		t.Errorf("%d command decisions recorded, want 4", n)
	}
	launched := lifecycle(evs, audit.EventSandboxLaunched)
	if len(launched) != 1 || launched[0].Context.Details["testId"] != "T-plan" || launched[0].Context.RunID != res.RunID {
		t.Fatalf("sandbox_launched: %+v", launched)
	}
	if !strings.HasPrefix(launched[0].Context.Details["probe.seccomp"], "ok: ") {
		t.Errorf("sandbox_launched lacks the probes: %v", launched[0].Context.Details)
	}
	if n := len(ofKind(evs, audit.KindResource)); n != 4 {
		t.Errorf("%d step outcomes recorded, want 4", n)
	}
	down := lifecycle(evs, audit.EventSandboxTornDown)
	if len(down) != 1 || down[0].Context.Details["outcome"] != runbook.OutcomePassed || down[0].Context.Details["stepsRun"] != "4" {
		t.Fatalf("sandbox_torn_down: %+v", down)
	}
	if evs[len(evs)-1].Context.Event != audit.EventSandboxTornDown {
		t.Errorf("the last event is %q, want sandbox_torn_down", evs[len(evs)-1].Context.Event)
	}
	tr.checkNoResidue(t, res.RunID, e.dir)
}

// TestLaunchStepFailureHalts: a failing step without continueOnFailure
// stops the plan; the later steps never run.
func TestLaunchStepFailureHalts(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	var tr tracker
	tr.track(&e.opts, nil)
	res, err := e.launch(t, context.Background(), plan("T-halt",
		sh("fails", "exit 4"),
		sh("never", "echo ran > /findings/never"),
	))
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitStepFailed || res.Outcome != runbook.OutcomeFailed {
		t.Fatalf("result %+v", res)
	}
	if want := `step 1 ("fails") failed (exit status 4) and does not say continueOnFailure: the plan stopped there`; res.Reason != want {
		t.Errorf("reason %q\nwant   %q", res.Reason, want)
	}
	if res.Steps[1].Status != runbook.StepNotRun {
		t.Errorf("step 2 status %q, want not_run", res.Steps[1].Status)
	}
	if _, err := os.Stat(filepath.Join(e.findings, "never")); err == nil {
		t.Error("the step after the failure ran")
	}
	tr.checkNoResidue(t, res.RunID, e.dir)
}

// TestLaunchCapKill: a step killed by its tool's wall cap is a failure
// recorded as a kill.
func TestLaunchCapKill(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	pol := strings.Replace(testPolicy, `"wallSeconds": 20`, `"wallSeconds": 1`, 1)
	e.pol = parsePolicy(t, pol)
	res, err := e.launch(t, context.Background(), plan("T-kill", self("sleep", "sleep", "30")))
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	s := res.Steps[0]
	if res.ExitCode != runbook.ExitStepFailed || s.KilledBy == nil || *s.KilledBy != "wall" {
		t.Fatalf("result %+v, step %+v", res, s)
	}
	var kills int
	for _, ev := range ofKind(e.events(t), audit.KindResource) {
		if ev.Decision == audit.DecisionKill && ev.Context.KilledBy == "wall" {
			kills++
		}
	}
	if kills != 1 {
		t.Errorf("%d wall kills recorded, want 1", kills)
	}
}

// TestLaunchEgress: a step's egress goes through the proxy with the
// plan's task, and each decision is recorded with the step.
func TestLaunchEgress(t *testing.T) {
	testutil.RequireRoot(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello from the host") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	e := newEnv(t)
	var out bytes.Buffer
	e.opts.Stdout = &out
	res, err := e.launch(t, context.Background(), plan("T-egress",
		self("allowed", "http-get", "http://upstream.test:"+itoa(port)+"/"),
		self("refused", "http-get", "http://127.0.0.2:"+itoa(port)+"/"),
	))
	if err != nil || res.ExitCode != runbook.ExitOK {
		t.Fatalf("result %+v, %v", res, err)
	}
	reps := payload.Parse(out.Bytes())
	if len(reps) != 2 || !reps[0].Succeeded || reps[1].Succeeded {
		t.Fatalf("payload reports %+v", reps)
	}
	var decided []audit.Event
	for _, ev := range ofKind(e.events(t), audit.KindEgress) {
		if ev.Decision != audit.DecisionInfo {
			decided = append(decided, ev)
		}
	}
	if len(decided) != 2 || decided[0].Decision != "allow" || decided[0].Context.Details["step"] != "1" ||
		decided[1].Decision != "deny" || decided[1].Context.Details["step"] != "2" || decided[0].Context.Task != "t" {
		t.Fatalf("egress decisions %+v", decided)
	}
}

// TestLaunchInterrupted: cancelling the launch (Ctrl-C) kills the running
// step, stops the plan and tears down.
func TestLaunchInterrupted(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt once step 2's sleep runs (a child of the init whose
	// command line says so), not after a time that a loaded machine may
	// spend before step 1 ends.
	var tr tracker
	tr.track(&e.opts, func(step, initPid int) {
		if step == 1 {
			go cancelWhenRunning(ctx, cancel, initPid, "sleep")
		}
	})
	start := time.Now()
	res, err := e.launch(t, ctx, plan("T-cancel", sh("first", "true"), self("sleep", "sleep", "30"), sh("never", "true")))
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitInterrupted || !strings.HasPrefix(res.Reason, `the launch was interrupted during step 2 ("sleep")`) {
		t.Fatalf("result %+v", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the interrupted launch took %v", d)
	}
	if res.Steps[2].Status != runbook.StepNotRun {
		t.Errorf("step 3 status %q", res.Steps[2].Status)
	}
	tr.checkNoResidue(t, res.RunID, e.dir)
}

// TestLaunchAuditFailureHalts: when the audit log refuses an event, no
// later step runs (the trail could not prove what it did), and the launch
// exits ExitAudit naming the record.
func TestLaunchAuditFailureHalts(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	runbook.SetAfterStep(&e.opts, func(step, _ int) {
		if step == 1 {
			e.log.Close()
		}
	})
	res, err := e.launch(t, context.Background(), plan("T-audit", sh("one", "true"), sh("two", "true"), sh("three", "echo ran > /findings/three")))
	if err == nil || !strings.Contains(err.Error(), "audit") {
		t.Errorf("Launch error %v, want the teardown's audit failure", err)
	}
	if res.ExitCode != runbook.ExitAudit || !strings.HasPrefix(res.Reason, `the audit log refused an event during step 2 ("two"), so no later step may run`) ||
		!strings.HasPrefix(res.AuditError, "the resource info record was not written: audit: log is closed") {
		t.Fatalf("result %+v", res)
	}
	if res.Steps[2].Status != runbook.StepNotRun {
		t.Errorf("step 3 status %q", res.Steps[2].Status)
	}
	if _, err := os.Stat(filepath.Join(e.findings, "three")); err == nil {
		t.Error("step 3 ran")
	}
}

// cancelWhenRunning calls cancel once a child of the process initPid has
// word among its arguments, or when ctx ends.
func cancelWhenRunning(ctx context.Context, cancel context.CancelFunc, initPid int, word string) {
	for ctx.Err() == nil {
		children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", initPid, initPid))
		for _, pid := range strings.Fields(string(children)) {
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if slices.Contains(strings.Split(string(cmdline), "\x00"), word) {
				cancel()
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLaunchWorkspaceProgram: a plan's workspace program is found as a
// session's step's is, inside the sandbox as the step starts
// (docs/policy.md, "Workspace programs"): one the workspace brought, and
// one an earlier step made; the result names the file that ran.
func TestLaunchWorkspaceProgram(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	e.pol = parsePolicy(t, strings.Replace(testPolicy, `"allow": [`,
		`"allow": [{"name": "venv", "command": "/workspace/.venv/bin/*", "allowExtraArgs": true},`, 1))
	bin := filepath.Join(e.workspace, ".venv", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "pytest"), []byte("#!/bin/sh\necho pytest ran \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	e.opts.Stdout = &out
	p := plan("T-venv",
		runbook.Step{Command: "/workspace/.venv/bin/pytest", Args: []string{"-q"}},
		sh("make", `printf '#!/bin/sh\necho made ran\n' > .venv/bin/made && chmod +x .venv/bin/made`),
		runbook.Step{Command: "/workspace/.venv/bin/made"},
	)
	res, err := e.launch(t, context.Background(), p)
	if err != nil || res.ExitCode != runbook.ExitOK {
		t.Fatalf("result %+v, %v", res, err)
	}
	if got := out.String(); got != "pytest ran -q\nmade ran\n" {
		t.Errorf("output %q", got)
	}
	if res.Steps[0].Path != "/workspace/.venv/bin/pytest" || res.Steps[2].Path != "/workspace/.venv/bin/made" {
		t.Errorf("paths %q, %q", res.Steps[0].Path, res.Steps[2].Path)
	}
}
