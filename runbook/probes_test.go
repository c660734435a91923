package runbook_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
)

func TestProbeHelpers(t *testing.T) {
	ok := []sandbox.ProbeResult{{Name: "uid", OK: true, Detail: "uid and gid are 65534"}}
	bad := append(ok, sandbox.ProbeResult{Name: "caps", Detail: "CapEff is not empty"}, sandbox.ProbeResult{Name: "seccomp", Detail: "Seccomp is not 2"})
	if got := runbook.ProbeFailure(ok); got != "" {
		t.Errorf("ProbeFailure(all passed) = %q", got)
	}
	if got := runbook.ProbeFailure(nil); !strings.Contains(got, "fail closed") {
		t.Errorf("ProbeFailure(none) = %q: an empty run must fail", got)
	}
	if got := runbook.ProbeFailure(bad); got != "caps: CapEff is not empty; seccomp: Seccomp is not 2" {
		t.Errorf("ProbeFailure = %q", got)
	}
	base := audit.Context{RunID: "r1", Details: map[string]string{"testId": "t1"}}
	ev := runbook.LaunchedEvent(base, ok, map[string]string{"imageDigest": "sha256:ab"})
	if ev.Kind != audit.KindLifecycle || ev.Decision != audit.DecisionInfo || ev.Context.Event != audit.EventSandboxLaunched ||
		ev.Context.Details["probe.uid"] != "ok: uid and gid are 65534" || ev.Context.Details["testId"] != "t1" ||
		ev.Context.Details["imageDigest"] != "sha256:ab" || ev.Context.RunID != "r1" {
		t.Errorf("LaunchedEvent = %+v", ev)
	}
	ref := runbook.RefusedEvent(base, runbook.ProbeFailure(bad), bad)
	if ref.Decision != audit.DecisionDeny || ref.Context.Event != audit.EventStartupRefused ||
		ref.Reason != "start-up check failed, nothing was run: caps: CapEff is not empty; seccomp: Seccomp is not 2" ||
		ref.Context.Details["probe.caps"] != "failed: CapEff is not empty" {
		t.Errorf("RefusedEvent = %+v", ref)
	}
	if base.Details["probe.uid"] != "" {
		t.Error("the events changed the caller's details")
	}
}

// fakeSession is a sandbox that runs nothing: it reports the probe
// results it was given and fails the test if a step is run.
type fakeSession struct {
	t      *testing.T
	probes []sandbox.ProbeResult
	closed bool
}

func (f *fakeSession) ExecDecided(context.Context, audit.Context, enforcer.StepRequest, decision.Decision) (enforcer.Result, error) {
	f.t.Error("a step ran in a sandbox whose probes failed")
	return enforcer.Result{ExitCode: -1, Error: "fake"}, errors.New("fake")
}
func (f *fakeSession) Record(ev audit.Event) (audit.Event, error) {
	f.t.Error("a record of a sandbox whose probes failed went through its session")
	return ev, errors.New("fake")
}
func (f *fakeSession) Serve(enforcer.EgressRecorder) error { return nil }
func (f *fakeSession) ProxyAddr() string                   { return "" }
func (f *fakeSession) Pid() int                            { return os.Getpid() }
func (f *fakeSession) Freeze() (string, error) {
	return "", errors.New("fake")
}
func (f *fakeSession) Evidence(dir string) (evidence.Record, error) {
	return evidence.Record{Dir: dir}, errors.New("fake")
}
func (f *fakeSession) Close() (sandbox.Teardown, error) {
	f.closed = true
	return sandbox.Teardown{}, nil
}
func (f *fakeSession) Probe(sandbox.ProbeRequest) ([]sandbox.ProbeResult, error) {
	return f.probes, nil
}

// allProbes are the probes the init runs, all passing.
func allProbes() []sandbox.ProbeResult {
	var out []sandbox.ProbeResult
	for _, n := range []string{"uid", "caps", "no_new_privs", "seccomp", "landlock", "interfaces", "routes", "host_dirs", "canary_file", "canary_listener"} {
		out = append(out, sandbox.ProbeResult{Name: n, OK: true, Detail: n + " holds"})
	}
	return out
}

// TestStartProbeFailureAborts makes each start-up probe fail in turn and
// checks that the launch runs nothing, writes startup_refused naming the
// probe, never writes sandbox_launched, closes the sandbox and exits
// ExitSetup. (The real probes are made to fail by holes opened from
// outside the init in probes_linux_test.go, and inside it in
// holes_linux_test.go.)
func TestStartProbeFailureAborts(t *testing.T) {
	for i, p := range allProbes() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t)
			probes := allProbes()
			probes[i].OK, probes[i].Detail = false, p.Name+" is open"
			fake := &fakeSession{t: t, probes: probes}
			runbook.SetStart(&e.opts, func(context.Context, *enforcer.Enforcer, enforcer.SandboxRequest, func(context.Context, enforcer.SandboxRequest) (runbook.Session, error)) (runbook.Session, error) {
				return fake, nil
			})
			res, err := e.launch(t, context.Background(), plan("T-probe", sh("never", "true")))
			if err == nil || res.ExitCode != runbook.ExitSetup || res.Outcome != runbook.OutcomeRefused {
				t.Fatalf("result %+v, err %v", res, err)
			}
			want := "start-up check failed, nothing was run: start-up probe failed: " + p.Name + ": " + p.Name + " is open"
			if res.Reason != want {
				t.Errorf("reason %q\nwant   %q", res.Reason, want)
			}
			if !fake.closed {
				t.Error("the refused sandbox was not closed")
			}
			evs := e.events(t)
			if len(lifecycle(evs, audit.EventSandboxLaunched)) != 0 {
				t.Error("sandbox_launched written for a sandbox whose probe failed")
			}
			ref := lifecycle(evs, audit.EventStartupRefused)
			if len(ref) != 1 || ref[0].Reason != want || ref[0].Context.Details["probe."+p.Name] != "failed: "+p.Name+" is open" {
				t.Fatalf("startup_refused: %+v", ref)
			}
			if res.Steps[0].Status != runbook.StepNotRun {
				t.Errorf("step status %q", res.Steps[0].Status)
			}
		})
	}
}

// TestLaunchDenied: a plan with a step the command gate refuses is
// refused as a whole before any sandbox starts; every decision is
// recorded and the refused step named.
func TestLaunchDenied(t *testing.T) {
	e := newEnv(t)
	runbook.SetStart(&e.opts, func(context.Context, *enforcer.Enforcer, enforcer.SandboxRequest, func(context.Context, enforcer.SandboxRequest) (runbook.Session, error)) (runbook.Session, error) {
		t.Error("a sandbox started for a refused plan")
		return nil, errors.New("no")
	})
	p := plan("T-deny",
		sh("fine", "true"),
		runbook.Step{Name: "wipe", Command: "rm", Args: []string{"-rf", "/workspace"}},
		runbook.Step{Name: "cross-tool", Command: "true"},
	)
	p.Task = "t"
	res, err := e.launch(t, context.Background(), p)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitDenied || res.Outcome != runbook.OutcomeDenied {
		t.Fatalf("result %+v", res)
	}
	want := `the command gate refused step 2 ("wipe"), so no step was run: "rm" matched deny rule "no-rm" of tool "t" (and 1 more refused steps)`
	if res.Reason != want {
		t.Errorf("reason %q\nwant   %q", res.Reason, want)
	}
	statuses := []string{runbook.StepNotRun, runbook.StepDenied, runbook.StepDenied}
	for i, s := range res.Steps {
		if s.Status != statuses[i] {
			t.Errorf("step %d status %q, want %q", i+1, s.Status, statuses[i])
		}
	}
	evs := e.events(t)
	cmds := ofKind(evs, audit.KindCommand)
	if len(cmds) != 3 || cmds[0].Decision != "allow" || cmds[1].Decision != "deny" || cmds[2].Decision != "deny" ||
		cmds[1].Context.Details["stepName"] != "wipe" {
		t.Fatalf("command events: %+v", cmds)
	}
	if len(ofKind(evs, audit.KindLifecycle)) != 1 { // chain_started only
		t.Errorf("lifecycle events for a refused plan: %+v", ofKind(evs, audit.KindLifecycle))
	}
}

// TestLaunchInvalid: a plan that breaks a rule, or no enforcer (its
// policy and audit log), is refused before anything is decided or run.
func TestLaunchInvalid(t *testing.T) {
	e := newEnv(t)
	res, err := e.launch(t, context.Background(), &runbook.Plan{TestID: "t"})
	if err == nil || res.ExitCode != runbook.ExitSetup || !strings.Contains(err.Error(), "a plan needs at least one step") {
		t.Fatalf("empty plan: %+v, %v", res, err)
	}
	if _, err := runbook.Launch(context.Background(), nil, plan("t", sh("a", "true")), runbook.Options{}); err == nil {
		t.Fatal("a launch without an enforcer (policy, audit log) ran")
	}
	fi, err := os.Stat(e.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 {
		t.Errorf("an invalid launch wrote %d bytes to the audit log", fi.Size())
	}
}

// TestLaunchNotInstalled: an allowed command that cannot be found is a
// setup failure with a reason, before any sandbox starts.
func TestLaunchNotInstalled(t *testing.T) {
	e := newEnv(t)
	pol := strings.Replace(testPolicy, `{"name": "cat", "command": "cat"`, `{"name": "cat", "command": "airlock-no-such-command"`, 1)
	e.pol = parsePolicy(t, pol)
	runbook.SetStart(&e.opts, func(context.Context, *enforcer.Enforcer, enforcer.SandboxRequest, func(context.Context, enforcer.SandboxRequest) (runbook.Session, error)) (runbook.Session, error) {
		t.Error("a sandbox started for a plan whose command is missing")
		return nil, errors.New("no")
	})
	res, err := e.launch(t, context.Background(), plan("t", runbook.Step{Command: "airlock-no-such-command"}))
	if err == nil || res.ExitCode != runbook.ExitNotFound || res.Outcome != runbook.OutcomeSetup ||
		!strings.Contains(res.Reason, `the command gate allowed "airlock-no-such-command" but it cannot be run: no such executable`) {
		t.Fatalf("result %+v, %v", res, err)
	}
	// Not a security event: setup_failed, no startup_refused.
	evs := e.events(t)
	if ref := lifecycle(evs, audit.EventStartupRefused); len(ref) != 0 {
		t.Errorf("startup_refused events: %+v", ref)
	}
	if sf := lifecycle(evs, audit.EventSetupFailed); len(sf) != 1 || sf[0].Decision != audit.DecisionInfo {
		t.Errorf("setup_failed events: %+v", sf)
	}
	if res.Steps[0].ExitCode != nil {
		t.Errorf("a step that never ran has exit code %d", *res.Steps[0].ExitCode)
	}
}

func TestLaunchBadRunID(t *testing.T) {
	e := newEnv(t)
	e.opts.RunID = "../escape"
	_, err := e.launch(t, context.Background(), plan("t", sh("a", "true")))
	if err == nil || !strings.Contains(err.Error(), `run id "../escape"`) {
		t.Fatalf("error %v", err)
	}
}

// stepFake is a fake session whose steps pass and whose probes pass at
// the start and fail from the second run on, as if an isolation property
// had gone during the first step.
type stepFake struct {
	t      *testing.T
	enf    *enforcer.Enforcer // records as the session would
	lis    net.Listener
	probes int
	frozen bool
}

func (f *stepFake) ExecDecided(context.Context, audit.Context, enforcer.StepRequest, decision.Decision) (enforcer.Result, error) {
	if f.frozen {
		return enforcer.Result{ExitCode: -1, Error: sandbox.ErrFrozen.Error()}, sandbox.ErrFrozen
	}
	return enforcer.Result{}, nil
}
func (f *stepFake) Record(ev audit.Event) (audit.Event, error) { return f.enf.Record(ev) }
func (f *stepFake) Serve(enforcer.EgressRecorder) error        { return nil }
func (f *stepFake) ProxyAddr() string                          { return f.lis.Addr().String() }
func (f *stepFake) Pid() int                                   { return os.Getpid() }
func (f *stepFake) Freeze() (string, error)                    { f.frozen = true; return "fake freezer", nil }
func (f *stepFake) Evidence(dir string) (evidence.Record, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return evidence.Record{}, err
	}
	return evidence.Record{Dir: dir}, os.WriteFile(filepath.Join(dir, "processes.json"), []byte("[]"), 0o600)
}
func (f *stepFake) Close() (sandbox.Teardown, error) {
	f.lis.Close()
	return sandbox.Teardown{Steps: 1}, nil
}
func (f *stepFake) Probe(req sandbox.ProbeRequest) ([]sandbox.ProbeResult, error) {
	f.probes++
	res := allProbes()
	if f.probes > 1 {
		res[0].OK, res[0].Detail = false, "uid or gid is not 65534"
	}
	return res, nil
}

// TestReprobeSignal: a probe that passed at the start and fails when
// re-run after a step is an escape signal (the real sandbox's re-run is
// in TestEscapeSignals, once sandbox.Session reports probes).
func TestReprobeSignal(t *testing.T) {
	e := newEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := &stepFake{t: t, lis: lis}
	runbook.SetStart(&e.opts, func(_ context.Context, enf *enforcer.Enforcer, _ enforcer.SandboxRequest, _ func(context.Context, enforcer.SandboxRequest) (runbook.Session, error)) (runbook.Session, error) {
		fake.enf = enf
		return fake, nil
	})
	res, err := e.launch(t, context.Background(), plan("T-reprobe", sh("one", "true"), sh("two", "true")))
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitEscape || len(res.Signals) != 1 || res.Signals[0].Name != runbook.SignalProbe ||
		res.Signals[0].Detail != "uid: uid or gid is not 65534" || res.Signals[0].Step != 1 {
		t.Fatalf("result %+v", res)
	}
	if res.Steps[1].Status != runbook.StepNotRun || !fake.frozen {
		t.Errorf("step 2 %q, frozen %v", res.Steps[1].Status, fake.frozen)
	}
	if _, err := os.Stat(filepath.Join(res.Evidence, "sandbox", "processes.json")); err != nil {
		t.Errorf("evidence: %v", err)
	}
}
