package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
)

// startSession starts a session for the test and registers a residue
// check: after Close, nothing of it may be left on the host.
func startSession(t *testing.T, cfg Config) *Session {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()) + "-" + strconv.Itoa(os.Getpid())
	}
	if cfg.Caps.Wall == 0 {
		cfg.Caps = testCaps()
	}
	cfg.BindSelf()
	ss, err := StartSession(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	pidns, err := os.Readlink("/proc/" + strconv.Itoa(ss.Pid()) + "/ns/pid")
	if err != nil {
		ss.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ss.Close()
		checkNoResidue(t, cfg.ID, pidns)
	})
	return ss
}

func shellStep(script string) Step {
	return Step{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}
}

func payloadStep(name string, args ...string) Step {
	return Step{Path: SelfPath, Args: append([]string{SelfPath}, args...), Env: []string{payloadEnv + "=" + name}}
}

// execOut runs a step and returns its result and combined output.
func execOut(t *testing.T, ss *Session, st Step) (Result, string) {
	t.Helper()
	var out bytes.Buffer
	st.Stdout, st.Stderr = &out, &out
	res, err := ss.Exec(context.Background(), st)
	if err != nil {
		t.Fatalf("Exec %v: %v (output %q)", st.Args, err, out.String())
	}
	return res, out.String()
}

func TestSessionSteps(t *testing.T) {
	testutil.RequireRoot(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "input.txt"), []byte("input\n"), 0o644)
	findings := filepath.Join(t.TempDir(), "findings")
	ss := startSession(t, Config{Workspace: ws, Findings: findings})

	// State persists from step to step, in the same workspace.
	res, out := execOut(t, ss, shellStep("cat input.txt; echo one > state; echo $$"))
	if res.ExitCode != 0 || !strings.HasPrefix(out, "input\n") {
		t.Fatalf("step 1: %+v %q", res, out)
	}
	pid1 := strings.TrimSpace(strings.TrimPrefix(out, "input\n"))
	res, out = execOut(t, ss, shellStep("cat /workspace/state; echo $$; echo report > /findings/report.txt; exit 3"))
	if res.ExitCode != 3 || !strings.HasPrefix(out, "one\n") {
		t.Fatalf("step 2: %+v %q", res, out)
	}
	if pid2 := strings.TrimSpace(strings.TrimPrefix(out, "one\n")); pid2 == pid1 {
		t.Errorf("steps 1 and 2 both ran as pid %s: not separate processes", pid1)
	}

	// Stdin reaches the step.
	var got bytes.Buffer
	res, err := ss.Exec(context.Background(), Step{Path: "/bin/cat", Stdin: strings.NewReader("piped"), Stdout: &got})
	if err != nil || res.ExitCode != 0 || got.String() != "piped" {
		t.Fatalf("cat step: %+v %v %q", res, err, got.String())
	}

	// What a step leaves running is killed before the next one starts.
	res, out = execOut(t, ss, shellStep("sleep 1000 & sleep 1000 & echo started"))
	if res.ExitCode != 0 || !strings.Contains(out, "started") {
		t.Fatalf("background step: %+v %q", res, out)
	}
	res, out = execOut(t, ss, shellStep("cat /proc/[0-9]*/comm"))
	// The init (its comm is "airlock-init") and this step.
	if res.ExitCode != 0 || strings.Contains(out, "sleep") || strings.Count(out, "\n") > 3 || !strings.Contains(out, "airlock-init\n") {
		t.Fatalf("processes after the last step: %q, want the init and this step only", out)
	}

	// A step that cannot start does not end the session.
	if _, err := ss.Exec(context.Background(), Step{Path: "/no/such/program"}); !errors.Is(err, ErrStepStart) {
		t.Fatalf("missing program: %v, want ErrStepStart", err)
	}

	// A step killed by its own wall clock does not end the session.
	st := payloadStep("sleep")
	st.Caps = &StepCaps{Wall: 500 * time.Millisecond, CPU: time.Second}
	res, out = execOut(t, ss, st)
	if res.KilledBy != "wall" || res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("sleeper: %+v %q, want killed by wall", res, out)
	}
	if res.Wall > 5*time.Second {
		t.Errorf("sleeper ran %v past its 500ms cap", res.Wall)
	}
	res, out = execOut(t, ss, payloadStep("echo", "after"))
	if res.ExitCode != 0 || !strings.Contains(out, "after") {
		t.Fatalf("step after a kill: %+v %q", res, out)
	}

	td, err := ss.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if td.Steps != 8 {
		t.Errorf("teardown counts %d steps, want 8", td.Steps)
	}
	if b, _ := os.ReadFile(filepath.Join(findings, "report.txt")); string(b) != "report\n" {
		t.Errorf("findings report %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "input.txt")); string(b) != "input\n" {
		t.Errorf("host workspace changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "state")); err == nil {
		t.Error("a file written inside reached the host workspace")
	}
	if _, err := ss.Exec(context.Background(), payloadStep("echo")); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Exec after Close: %v, want ErrSessionEnded", err)
	}
}

func TestSessionCaps(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := Config{Caps: testCaps()}
	cfg.Caps.MemoryBytes = 64 << 20
	cfg.Caps.CPU = 5 * time.Second
	ss := startSession(t, cfg)

	st := payloadStep("spin")
	st.Caps = &StepCaps{Wall: 20 * time.Second, CPU: time.Second}
	res, out := execOut(t, ss, st)
	if res.KilledBy != "cpu" {
		t.Fatalf("spin: %+v %q, want killed by cpu", res, out)
	}
	res, out = execOut(t, ss, payloadStep("membomb"))
	if res.KilledBy != "memory" {
		t.Fatalf("membomb: %+v %q, want killed by memory", res, out)
	}
	res, out = execOut(t, ss, payloadStep("echo", "alive"))
	if res.ExitCode != 0 || !strings.Contains(out, "alive") {
		t.Fatalf("step after the caps: %+v %q", res, out)
	}
	// A step may not ask for more CPU than the session carries.
	st = payloadStep("echo")
	st.Caps = &StepCaps{Wall: time.Second, CPU: time.Minute}
	if _, err := ss.Exec(context.Background(), st); err == nil || !strings.Contains(err.Error(), "exceeds the session's") {
		t.Fatalf("step over the session's CPU: %v", err)
	}
}

func TestSessionEndOnKill(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	st := payloadStep("sleep")
	st.Caps = &StepCaps{Wall: 300 * time.Millisecond, CPU: time.Second}
	st.EndSessionOnKill = true
	res, _ := execOut(t, ss, st)
	if res.KilledBy != "wall" {
		t.Fatalf("result %+v, want killed by wall", res)
	}
	if _, err := ss.Exec(context.Background(), payloadStep("echo")); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("Exec after an ending kill: %v, want ErrSessionEnded", err)
	}
	if _, err := ss.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestSessionContext(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := ss.Exec(ctx, payloadStep("sleep"))
	if !errors.Is(err, context.DeadlineExceeded) || res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("Exec past its context: %+v %v", res, err)
	}
	res, out := execOut(t, ss, payloadStep("echo", "next"))
	if res.ExitCode != 0 || !strings.Contains(out, "next") {
		t.Fatalf("step after a cancelled one: %+v %q", res, out)
	}
}

func TestSessionProbesOnce(t *testing.T) {
	testutil.RequireRoot(t)
	file, addr := canaries(t)
	cfg := Config{Probes: &ProbeRequest{CanaryFile: file, CanaryAddr: addr}}
	if !seccompAvailable() {
		t.Skip("the init's probes need seccomp")
	}
	ss := startSession(t, cfg)
	res, _ := execOut(t, ss, payloadStep("exit"))
	if res.ExitCode != 7 {
		t.Fatalf("result %+v", res)
	}
}

func TestSessionConfigRefused(t *testing.T) {
	testutil.RequireRoot(t)
	_, err := StartSession(context.Background(), Config{Path: "/bin/true", Caps: testCaps()})
	if err == nil || !strings.Contains(err.Error(), "belong to each Step") {
		t.Fatalf("StartSession with a Path: %v", err)
	}
}

// TestSessionFreezeEvidence runs the suspected-escape procedure on a
// session whose step is still running: freeze, snapshot, close.
func TestSessionFreezeEvidence(t *testing.T) {
	testutil.RequireRoot(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("kept"), 0o644)
	ss := startSession(t, Config{Workspace: ws, Proxy: true})
	step := make(chan error, 1)
	go func() {
		_, err := ss.Exec(context.Background(), shellStep("echo changed > /workspace/new.txt; ln -s /etc/passwd /workspace/link; exec sleep 1000"))
		step <- err
	}()
	// Wait until the step has written its file and execs sleep.
	evDir := filepath.Join(t.TempDir(), "evidence")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns, _ := os.Readlink("/proc/" + strconv.Itoa(ss.Pid()) + "/ns/pid")
		sleeping := false
		for _, p := range evidence.NamespacePids(ns) {
			comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm")
			sleeping = sleeping || string(comm) == "sleep\n"
		}
		if sleeping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the step did not start sleeping")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mech, err := ss.Freeze()
	if err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	t.Logf("frozen by %s", mech)
	if dirs := ss.sb.group.Dirs(); !dirs.Empty() {
		// Root with a cgroup: the group's own freezer, named by its file.
		group := "airlock-sandbox-" + ss.sb.cfg.ID
		if !strings.HasPrefix(mech, "cgroup v") || !strings.Contains(mech, "/"+group+"/") {
			t.Errorf("frozen by %q, want the freezer of the group %s", mech, group)
		}
	}
	if _, err := ss.Exec(context.Background(), payloadStep("echo")); !errors.Is(err, ErrFrozen) {
		t.Errorf("Exec on a frozen session: %v, want ErrFrozen", err)
	}
	ev, err := ss.Evidence(evDir)
	if err != nil {
		t.Fatalf("Evidence: %v", err)
	}
	if len(ev.Errors) > 0 {
		t.Errorf("evidence errors: %q", ev.Errors)
	}
	var procs []struct {
		InPidNS  bool              `json:"inPidNamespace"`
		InCgroup bool              `json:"inCgroup"`
		Status   map[string]string `json:"status"`
	}
	b, _ := os.ReadFile(filepath.Join(evDir, "processes.json"))
	if err := json.Unmarshal(b, &procs); err != nil {
		t.Fatalf("processes.json: %v", err)
	}
	var sleepSeen bool
	for _, p := range procs {
		if p.Status["Name"] == "sleep" {
			sleepSeen = p.InPidNS && p.InCgroup
		}
	}
	if !sleepSeen {
		t.Errorf("processes.json lacks the frozen sleeper in the namespace and the cgroup: %s", b)
	}
	for _, f := range []string{"mounts.txt", "namespaces.txt", "net/dev", "net/tcp", "workspace-mtimes.txt", "workspace/kept.txt", "workspace/new.txt"} {
		if _, err := os.Stat(filepath.Join(evDir, f)); err != nil {
			t.Errorf("evidence lacks %s: %v", f, err)
		}
	}
	mt, _ := os.ReadFile(filepath.Join(evDir, "workspace-mtimes.txt"))
	for _, w := range []string{`"kept.txt"`, `"new.txt"`, `l 0777`} {
		if !strings.Contains(string(mt), w) {
			t.Errorf("workspace-mtimes.txt lacks %s: %s", w, mt)
		}
	}
	if len(ev.WorkspaceSkipped) != 1 || !strings.HasPrefix(ev.WorkspaceSkipped[0], "link:") {
		t.Errorf("workspace skipped %q, want the link", ev.WorkspaceSkipped)
	}
	if _, err := ss.Evidence(evDir); err == nil {
		t.Error("Evidence into a non-empty directory succeeded")
	}
	td, err := ss.Close()
	if err != nil {
		t.Fatalf("Close of a frozen session: %v", err)
	}
	if !td.Frozen {
		t.Error("teardown does not say the session was frozen")
	}
	select {
	case err := <-step:
		if !errors.Is(err, ErrSessionEnded) {
			t.Errorf("the running step's Exec: %v, want ErrSessionEnded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running step's Exec did not return after Close")
	}
}
