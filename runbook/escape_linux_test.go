package runbook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
)

// escapeCase injects one escape signal: by a payload that provokes the
// benign form of it, or by a hook that opens one hole after step 2.
type escapeCase struct {
	name    string
	signal  string
	trigger runbook.Step                                     // step 2
	after   func(t *testing.T, e *env, tr *tracker, pid int) // run after step 2, before the checks
	setup   func(t *testing.T, e *env)
	detail  string // a fragment of the signal's detail
	// midStep says the signal fires while step 2 still runs: the step is
	// frozen in place, seen in the evidence, and halted.
	midStep bool
}

func escapeCases() []escapeCase {
	benign := sh("benign", "echo benign > /workspace/benign.txt")
	return []escapeCase{{
		name:    "seccomp kill",
		signal:  runbook.SignalSeccompKill,
		trigger: self("x32", "foreign-abi-child", "x32"),
		detail:  "died of SIGSYS",
	}, {
		name:    "metadata access",
		signal:  runbook.SignalMetadata,
		trigger: self("metadata", "http-get", "http://169.254.169.254/latest/meta-data/"),
		detail:  `host "169.254.169.254:80" is always blocked`,
	}, {
		name:    "metadata access mid-step",
		signal:  runbook.SignalMetadata,
		trigger: sh("metadata-then-sleep", "/.airlock/self payload http-get http://169.254.169.254/latest/meta-data/; exec sleep 30"),
		detail:  `host "169.254.169.254:80" is always blocked`,
		midStep: true,
	}, {
		name:    "audit chain break",
		signal:  runbook.SignalAuditChain,
		trigger: benign,
		after: func(t *testing.T, e *env, _ *tracker, _ int) {
			tamper(t, e.auditPath, "sandbox launched", "sandbox lAunched")
			e.tampered = true
		},
		detail: "lines written since the launch (the launch event included) were changed",
	}, {
		name:    "process outside its cgroup",
		signal:  runbook.SignalCgroup,
		trigger: benign,
		after: func(t *testing.T, _ *env, _ *tracker, pid int) {
			moveToParentCgroup(t, pid)
		},
		detail: "not in the sandbox's",
	}, {
		name:    "host write",
		signal:  runbook.SignalHostWrite,
		trigger: benign,
		setup: func(t *testing.T, e *env) {
			p := filepath.Join(e.dir, "sentinel")
			if err := os.WriteFile(p, []byte("before\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.opts.Sentinels = append(e.opts.Sentinels, p)
		},
		after: func(t *testing.T, e *env, _ *tracker, _ int) {
			f, err := os.OpenFile(filepath.Join(e.dir, "sentinel"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("after\n")
			f.Close()
		},
		detail: "changed ",
	}, {
		name:    "canary listener reached",
		signal:  runbook.SignalCanary,
		trigger: benign,
		after: func(t *testing.T, _ *env, tr *tracker, _ int) {
			c, err := net.Dial("tcp", tr.canaryAddr)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			time.Sleep(50 * time.Millisecond) // the canary counts on accept
		},
		detail: "accepted 1 connection",
	}, {
		name:    "probe fails after launch",
		signal:  runbook.SignalProbe,
		trigger: benign,
		setup: func(t *testing.T, e *env) {
			// The hole: the re-run probes are told that a file every
			// sandbox shows (/etc/hostname) is the host's canary.
			runbook.SetReprobe(&e.opts, func(step int, req sandbox.ProbeRequest) sandbox.ProbeRequest {
				if step == 2 {
					req.CanaryFile = "/etc/hostname"
				}
				return req
			})
		},
		detail: "canary_file: /etc/hostname is reachable",
	}}
}

// TestEscapeSignals injects each escape signal into a running plan and
// checks the whole procedure: the plan halted, escape_suspected recorded
// with the signal, the evidence written (the sandbox's processes, mounts,
// network and workspace; the host's files; the audit trail), the
// findings marked UNTRUSTED, ExitEscape, and a clean teardown.
func TestEscapeSignals(t *testing.T) {
	testutil.RequireRoot(t)
	for _, c := range escapeCases() {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			if c.setup != nil {
				c.setup(t, e)
			}
			var tr tracker
			tr.track(&e.opts, func(step, pid int) {
				if step == 2 && c.after != nil {
					c.after(t, e, &tr, pid)
				}
			})
			p := plan("T-escape",
				sh("prepare", "echo report > /findings/report.txt; echo kept > /workspace/kept.txt"),
				c.trigger,
				sh("never", "echo ran > /findings/never.txt"),
			)
			res, err := e.launch(t, context.Background(), p)
			if err != nil {
				t.Fatalf("Launch: %v", err)
			}
			checkEscape(t, e, res, c)
			tr.checkNoResidue(t, res.RunID, e.dir)
		})
	}
}

func checkEscape(t *testing.T, e *env, res runbook.Result, c escapeCase) {
	t.Helper()
	if res.ExitCode != runbook.ExitEscape || res.Outcome != runbook.OutcomeEscape || !res.Untrusted {
		t.Fatalf("result %+v", res)
	}
	if len(res.Signals) == 0 || res.Signals[0].Name != c.signal || res.Signals[0].Step != 2 {
		t.Fatalf("signals %+v, want %s at step 2 first", res.Signals, c.signal)
	}
	if !strings.Contains(res.Signals[0].Detail, c.detail) {
		t.Errorf("signal detail %q lacks %q", res.Signals[0].Detail, c.detail)
	}
	if !strings.HasPrefix(res.Reason, "escape suspected ("+c.signal) {
		t.Errorf("reason %q", res.Reason)
	}
	if res.Steps[2].Status != runbook.StepNotRun {
		t.Errorf("step 3 status %q, want not_run", res.Steps[2].Status)
	}
	if c.midStep {
		if res.Steps[1].Status != runbook.StepHalted {
			t.Errorf("step 2 status %q, want halted", res.Steps[1].Status)
		}
		// Frozen where it stood: the step's shell waiting for the request
		// the proxy refused, or, when the freeze came a little later, the
		// payload returning or the sleep the shell went on to exec.
		b, _ := os.ReadFile(filepath.Join(res.Evidence, "sandbox/processes.json"))
		if !bytes.Contains(b, []byte(`"Name": "sh"`)) && !bytes.Contains(b, []byte(`"Name": "self"`)) && !bytes.Contains(b, []byte(`"Name": "sleep"`)) {
			t.Errorf("the frozen step is not in the evidence: %s", b)
		}
	}
	if _, err := os.Stat(filepath.Join(e.findings, "never.txt")); err == nil {
		t.Error("a step ran after the signal")
	}
	// The findings came out, marked untrusted.
	if b, err := os.ReadFile(filepath.Join(e.findings, "report.txt")); err != nil || string(b) != "report\n" {
		t.Errorf("findings: %q %v", b, err)
	}
	mark, err := os.ReadFile(filepath.Join(e.findings, runbook.UntrustedMarker))
	if err != nil || !strings.Contains(string(mark), "escape suspected ("+c.signal) {
		t.Errorf("UNTRUSTED marker: %q %v", mark, err)
	}
	// The evidence.
	want := filepath.Join(e.evidence, e.opts.RunID)
	if res.Evidence != want {
		t.Fatalf("evidence in %q, want %q", res.Evidence, want)
	}
	for _, f := range []string{"summary.json", "process-tree.json", "host-netns.json", "host-files.json", "audit-since-launch.jsonl",
		"sandbox/processes.json", "sandbox/mounts.txt", "sandbox/namespaces.txt", "sandbox/net/dev", "sandbox/net/tcp",
		"sandbox/workspace-mtimes.txt", "sandbox/workspace/kept.txt", "sandbox/workspace/input.txt"} {
		if _, err := os.Stat(filepath.Join(res.Evidence, f)); err != nil {
			t.Errorf("evidence lacks %s: %v", f, err)
		}
	}
	var sum struct {
		Signals  []runbook.Signal `json:"signals"`
		Freeze   string           `json:"freeze"`
		InitPid  int              `json:"initPid"`
		Problems []string         `json:"problems"`
		Sandbox  evidence.Record  `json:"sandbox"`
	}
	b, _ := os.ReadFile(filepath.Join(res.Evidence, "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if len(sum.Signals) == 0 || sum.Signals[0].Name != c.signal || !strings.HasPrefix(sum.Freeze, "cgroup") {
		t.Errorf("summary: signals %+v, freeze %q", sum.Signals, sum.Freeze)
	}
	if len(sum.Problems) > 0 || len(sum.Sandbox.Errors) > 0 {
		t.Errorf("evidence problems: %q; sandbox: %q", sum.Problems, sum.Sandbox.Errors)
	}
	// The process tree holds the init, and each process with why it
	// belongs to the sandbox.
	var tree []struct {
		Pid int    `json:"pid"`
		Why string `json:"why"`
	}
	if b, err := os.ReadFile(filepath.Join(res.Evidence, "process-tree.json")); err != nil || json.Unmarshal(b, &tree) != nil {
		t.Fatalf("process-tree.json: %q %v", b, err)
	}
	whys := map[int]string{}
	for _, p := range tree {
		whys[p.Pid] = p.Why
		if p.Why != "init" && p.Why != "pid namespace" && p.Why != "descendant" {
			t.Errorf("process-tree.json: pid %d is there as %q", p.Pid, p.Why)
		}
	}
	if whys[sum.InitPid] != "init" {
		t.Errorf("process-tree.json: init %d is there as %q: %+v", sum.InitPid, whys[sum.InitPid], tree)
	}
	if mt, _ := os.ReadFile(filepath.Join(res.Evidence, "sandbox/workspace-mtimes.txt")); !bytes.Contains(mt, []byte(`"kept.txt"`)) {
		t.Errorf("workspace mtimes lack kept.txt: %s", mt)
	}
	// The audit trail.
	evs := e.events(t)
	esc := lifecycle(evs, audit.EventEscapeSuspected)
	if len(esc) != 1 || esc[0].Decision != audit.DecisionAlert || esc[0].Context.Details["signal"] != c.signal ||
		esc[0].Context.Details["evidence"] != res.Evidence || esc[0].Context.RunID != res.RunID {
		t.Fatalf("escape_suspected events: %+v", esc)
	}
	down := lifecycle(evs, audit.EventSandboxTornDown)
	if len(down) != 1 || down[0].Context.Details["untrusted"] != "true" || down[0].Context.Details["outcome"] != runbook.OutcomeEscape {
		t.Errorf("sandbox_torn_down: %+v", down)
	}
	if down[0].Seq < esc[0].Seq {
		t.Error("the teardown was recorded before the suspicion")
	}
}

// tamper edits the first occurrence of old in the audit file in place:
// what an attacker with write access to the log would do.
func tamper(t *testing.T, path, old, repl string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) || len(old) != len(repl) {
		t.Fatalf("tamper: %q not in the log", old)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Replace(b, []byte(old), []byte(repl), 1), 0); err != nil {
		t.Fatal(err)
	}
}

// moveToParentCgroup moves pid out of its pids cgroup into the parent
// (what a process that escaped its caps would have done).
func moveToParentCgroup(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var procs string
		switch {
		case strings.Contains(","+parts[1]+",", ",pids,"):
			procs = filepath.Join("/sys/fs/cgroup/pids", filepath.Dir(parts[2]), "cgroup.procs")
		case parts[0] == "0" && parts[1] == "" && strings.Contains(parts[2], "airlock-"):
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				procs = filepath.Join("/sys/fs/cgroup", filepath.Dir(parts[2]), "cgroup.procs")
			}
		}
		if procs == "" {
			continue
		}
		if err := os.WriteFile(procs, []byte(itoa(pid)), 0); err != nil {
			t.Fatalf("move %d to %s: %v", pid, procs, err)
		}
		return
	}
	t.Fatalf("no pids cgroup to move %d out of: %s", pid, b)
}

// TestInitDeathIsEscape kills the session's init from the host during
// step 2, as a crash would end it: the launch reports init_died as an
// escape signal and exits ExitEscape, the step halted and the next not
// run. TestSignalsToInitHeld shows a process inside cannot do it.
func TestInitDeathIsEscape(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	var tr tracker
	tr.track(&e.opts, func(step, pid int) {
		if step == 1 {
			go func() { // once step 2 runs: the init has a child again
				for range 400 {
					time.Sleep(25 * time.Millisecond)
					if kids, _ := os.ReadFile("/proc/" + itoa(pid) + "/task/" + itoa(pid) + "/children"); len(kids) > 0 {
						syscall.Kill(pid, syscall.SIGKILL)
						return
					}
				}
			}()
		}
	})
	p := plan("T-init-died", sh("first", "true"), sh("killed", "sleep 20"), sh("never", "echo ran > /findings/never.txt"))
	res, err := e.launch(t, context.Background(), p)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitEscape || len(res.Signals) == 0 || res.Signals[0].Name != runbook.SignalInitDied || res.Signals[0].Step != 2 {
		t.Fatalf("result %+v, want %s at step 2", res, runbook.SignalInitDied)
	}
	if res.Steps[1].Status != runbook.StepHalted || res.Steps[2].Status != runbook.StepNotRun {
		t.Errorf("steps %+v", res.Steps)
	}
	tr.checkNoResidue(t, res.RunID, e.dir)
}

// TestSignalsToInitHeld runs airlock's signal-init attack (every signal
// sent to pid 1, every way) as a plan's step: nothing fires, and the
// next step runs.
func TestSignalsToInitHeld(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	p := plan("T-signals", self("signals", "signal-init"), sh("after", "echo after > /findings/after.txt"))
	res, err := e.launch(t, context.Background(), p)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitOK || len(res.Signals) != 0 {
		t.Fatalf("result %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(e.findings, "after.txt")); err != nil || string(b) != "after\n" {
		t.Errorf("the step after the signals: %q %v", b, err)
	}
}

// TestLaunchStoppedByAlert: under session.onAlert ["resource_kill"], a
// step killed by its wall cap raises the alert through the launch's
// session, and the launch stops as on any escape signal: ExitEscape, the
// signal naming the alert, escape_suspected recorded with the evidence
// kept, the findings marked untrusted, and the later step, which says
// continueOnFailure for the first, never run.
func TestLaunchStoppedByAlert(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	e.pol = parsePolicy(t, strings.Replace(strings.Replace(testPolicy, `"wallSeconds": 20`, `"wallSeconds": 1`, 1),
		`"egress":`, `"session": {"onAlert": ["resource_kill"]}, "egress":`, 1))
	// The log with the monitor, as airlock launch opens it.
	e.auditPath = filepath.Join(e.dir, "monitored.jsonl")
	log, err := audit.Open(e.auditPath, audit.WithHook(monitor.New(monitor.ThresholdsFor(e.pol.Policy))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	e.log = log
	killed := sh("killed", "echo kept > /findings/report.txt; sleep 10")
	killed.ContinueOnFailure = true
	res, err := e.launch(t, context.Background(), plan("T-alert", killed, sh("never", "echo ran > /findings/never.txt")))
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitEscape || res.Outcome != runbook.OutcomeEscape || len(res.Signals) != 1 ||
		res.Signals[0].Name != runbook.SignalAlert || res.Signals[0].Step != 1 ||
		!strings.HasPrefix(res.Signals[0].Detail, "alert resource_kill (session.onAlert): ") {
		t.Fatalf("result %+v", res)
	}
	if res.Steps[0].KilledBy == nil || *res.Steps[0].KilledBy != "wall" || res.Steps[1].Status != runbook.StepNotRun {
		t.Errorf("steps %+v", res.Steps)
	}
	if _, err := os.Stat(filepath.Join(e.findings, "never.txt")); err == nil {
		t.Error("a step ran after the alert")
	}
	if mark, err := os.ReadFile(filepath.Join(e.findings, runbook.UntrustedMarker)); err != nil || !strings.Contains(string(mark), runbook.SignalAlert) {
		t.Errorf("UNTRUSTED marker: %q %v", mark, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.findings, "report.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("findings: %q %v", b, err)
	}
	if res.Evidence != filepath.Join(e.evidence, e.opts.RunID) || !res.Untrusted {
		t.Fatalf("evidence in %q, untrusted %v", res.Evidence, res.Untrusted)
	}
	for _, f := range []string{"summary.json", "sandbox/processes.json", "sandbox/workspace/input.txt"} {
		if _, err := os.Stat(filepath.Join(res.Evidence, f)); err != nil {
			t.Errorf("evidence lacks %s: %v", f, err)
		}
	}
	esc := lifecycle(e.events(t), audit.EventEscapeSuspected)
	if len(esc) != 1 || esc[0].Context.Details["signal"] != runbook.SignalAlert || esc[0].Context.Details["evidence"] != res.Evidence ||
		!strings.Contains(esc[0].Context.Details["detail"], "resource_kill") {
		t.Fatalf("escape_suspected events: %+v", esc)
	}
	testutil.CheckNoSandboxLeft(t, res.RunID)
}
