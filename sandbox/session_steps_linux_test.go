package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/limits"
)

// stepCaps are a step's caps with memory and tasks of its own.
func stepCaps(memory, tasks int64) *StepCaps {
	return &StepCaps{Wall: 20 * time.Second, CPU: 10 * time.Second, MemoryBytes: memory, Tasks: tasks}
}

// noStepGroupLeft fails t if step n's group is left under the session's
// a moment after the step (it is removed in the background).
func noStepGroupLeft(t *testing.T, ss *Session, n int) {
	t.Helper()
	for c, dir := range ss.sb.group.Dirs().V1 {
		dir = filepath.Join(dir, "airlock-step-"+strconv.Itoa(n))
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: step %d's group %s left after the step", c, n, dir)
				break
			}
		}
	}
}

// TestSessionStepMemory: a step whose own memory cap is below the
// session's is killed by its own cap, in its own group — its peak stays
// under it, the receipt says so — and the session's init survives: the
// next step runs.
func TestSessionStepMemory(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	if _, ok := ss.sb.group.Dirs().V1["memory"]; !ok {
		t.Skip("no cgroup v1 memory hierarchy: see TestSessionStepRlimits")
	}
	const stepMemory = 48 << 20
	st := payloadStep("membomb")
	st.Caps = stepCaps(stepMemory, 0)
	res, out := execOut(t, ss, st)
	if res.KilledBy != string(limits.KilledByMemory) {
		t.Fatalf("membomb: %+v %q, want killed by memory", res, out)
	}
	// The kernel's peak may pass the limit by a charge batch.
	if res.PeakMemoryBytes == 0 || res.PeakMemoryBytes > stepMemory+1<<20 {
		t.Errorf("membomb's peak %d bytes, want about its own cap %d (the session's is %d)", res.PeakMemoryBytes, stepMemory, testCaps().MemoryBytes)
	}
	if r := res.Receipt[limits.ControlMemory]; !strings.Contains(r, "per step: cgroup v1 memory.limit_in_bytes of the step's own group") {
		t.Errorf("receipt memory = %q", r)
	}
	noStepGroupLeft(t, ss, 1)
	res, out = execOut(t, ss, payloadStep("echo", "alive"))
	if res.ExitCode != 0 || !strings.Contains(out, "alive") {
		t.Fatalf("step after the kill: %+v %q", res, out)
	}
	noStepGroupLeft(t, ss, 2)
}

// TestSessionStepTasks: a fork bomb in a step whose own tasks cap is
// below the session's is stopped by its own cap (killedBy pids), and the
// next step runs.
func TestSessionStepTasks(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	if _, ok := ss.sb.group.Dirs().V1["pids"]; !ok {
		t.Skip("no cgroup v1 pids hierarchy: see TestSessionStepRlimits")
	}
	// 30 sleeps: within the session's 64 tasks, past the step's 8.
	st := shellStep(`i=0; while [ $i -lt 30 ]; do sleep 30 & i=$((i+1)); done; wait`)
	st.Caps = stepCaps(0, 8)
	res, out := execOut(t, ss, st)
	if res.KilledBy != string(limits.KilledByPids) {
		t.Fatalf("fork bomb: %+v %q, want killed by pids", res, out)
	}
	if r := res.Receipt[limits.ControlTasks]; !strings.Contains(r, "per step: cgroup v1 pids.max of the step's own group (8)") {
		t.Errorf("receipt tasks = %q", r)
	}
	noStepGroupLeft(t, ss, 1)
	res, out = execOut(t, ss, shellStep("echo alive"))
	if res.ExitCode != 0 || res.KilledBy != "" || !strings.Contains(out, "alive") {
		t.Fatalf("step after the fork bomb: %+v %q", res, out)
	}
}

// TestSessionOrphansReaped: the orphans a step leaves to the init are
// reaped while the step runs, not at its end: 40 of them, one after
// another, each dead at once, stay within the step's 16 tasks.
func TestSessionOrphansReaped(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	if _, ok := ss.sb.group.Dirs().V1["pids"]; !ok {
		t.Skip("no cgroup v1 pids hierarchy")
	}
	st := shellStep(`i=0; while [ $i -lt 40 ]; do (/bin/true &); i=$((i+1)); sleep 0.02; done; echo done`)
	st.Caps = stepCaps(0, 16)
	res, out := execOut(t, ss, st)
	if res.ExitCode != 0 || res.KilledBy != "" || !strings.Contains(out, "done") {
		t.Fatalf("orphans: %+v %q, want all 40 made and reaped within 16 tasks", res, out)
	}
}

// TestSessionStepGroupHeld: a step starts in its own group, and cannot
// leave it: it holds no descriptor of a cgroup file, sees no cgroup file
// system to write to, and cannot mount one.
func TestSessionStepGroupHeld(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	if ss.sb.group.Dirs().V1["memory"] == "" {
		t.Skip("no cgroup v1 memory hierarchy")
	}
	st := shellStep(`grep memory /proc/self/cgroup; ls /proc/self/fd | tr '\n' ' '; echo
for f in /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/memory/tasks /sys/fs/cgroup/cgroup.procs; do echo 0 > $f && echo "wrote $f"; done
mkdir -p /tmp/cg && mount -t cgroup -o memory none /tmp/cg && echo mounted
mount -t cgroup2 none /tmp/cg && echo mounted2
grep memory /proc/self/cgroup`)
	st.Caps = stepCaps(64<<20, 16)
	res, out := execOut(t, ss, st)
	t.Logf("step output:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], "/airlock-step-1") {
		t.Errorf("the step's memory cgroup is %q, want its own group airlock-step-1", lines[0])
	}
	if fds := strings.Fields(lines[1]); len(fds) > 4 {
		t.Errorf("the step holds descriptors %v, want only its streams (and ls's own)", fds)
	}
	if strings.Contains(out, "wrote ") || strings.Contains(out, "mounted") {
		t.Errorf("a step moved or mounted a cgroup: %q", out)
	}
	if last := lines[len(lines)-1]; last != lines[0] {
		t.Errorf("the step's memory cgroup changed from %q to %q", lines[0], last)
	}
	_ = res
	noStepGroupLeft(t, ss, 1)
}

const stepsRootlessEnv = "AIRLOCK_TEST_STEPS_ROOTLESS"

// TestSessionStepRlimits runs TestSessionStepRlimitsInner as uid 65534,
// where the host delegates no cgroup: a step's memory and tasks caps are
// then rlimits on the step's own processes.
func TestSessionStepRlimits(t *testing.T) {
	testutil.RequireRoot(t)
	out := testutil.RunTestAsNobody(t, "TestSessionStepRlimitsInner", stepsRootlessEnv+"=1")
	t.Logf("rootless run:\n%s", out)
}

// TestSessionStepRlimitsInner: without a cgroup, the step's process
// carries its own RLIMIT_DATA and RLIMIT_NPROC (the session's init keeps
// the session's), the receipt says so, a fork bomb is stopped by the
// step's RLIMIT_NPROC, and the next step gets its own again.
func TestSessionStepRlimitsInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	if os.Getenv(stepsRootlessEnv) == "" {
		t.Skip("run by TestSessionStepRlimits")
	}
	testMemory = 1 << 44
	ss := startSession(t, Config{})
	if !ss.sb.group.Dirs().Empty() {
		t.Skip("this user has a delegated cgroup")
	}
	// The step's first process (the shell), once the init has set its
	// limits (just after it started), and the init's.
	st := shellStep(`sleep 1; grep -E "Max (data size|processes)" /proc/$$/limits; grep -E "Max (data size|processes)" /proc/1/limits`)
	st.Caps = stepCaps(96<<20, 5)
	res, out := execOut(t, ss, st)
	t.Logf("limits:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("output %q", out)
	}
	if f := strings.Fields(lines[0]); len(f) < 5 || f[3] != "100663296" || f[4] != "100663296" {
		t.Errorf("the step's data limit: %q, want 100663296 both soft and hard", lines[0])
	}
	// The step's 5 on top of the init's threads, which the kernel counts
	// with them; below the session's 64.
	stepN, initN := strings.Fields(lines[1]), strings.Fields(lines[3])
	if len(stepN) < 4 || len(initN) < 4 || stepN[2] != stepN[3] || stepN[2] == initN[2] {
		t.Fatalf("the step's process limit %q, the init's %q: want the step's own, soft and hard", lines[1], lines[3])
	}
	if n, err := strconv.Atoi(stepN[2]); err != nil || n <= 5 || n >= 64 {
		t.Errorf("the step's process limit %q: want 5 and the init's threads, under the session's 64", lines[1])
	}
	for k, want := range map[string]string{limits.ControlMemory: "per step: RLIMIT_DATA per process of the step (100663296 bytes)", limits.ControlTasks: "per step: RLIMIT_NPROC of the step (5 processes"} {
		if r := res.Receipt[k]; !strings.Contains(r, want) || !strings.Contains(r, "no cgroup") {
			t.Errorf("receipt %s = %q, want %q and why", k, r, want)
		}
	}
	bomb := shellStep(`i=0; while [ $i -lt 20 ]; do sleep 30 & i=$((i+1)); done; echo forked $i`)
	bomb.Caps = stepCaps(0, 5)
	res, out = execOut(t, ss, bomb)
	if strings.Contains(out, "forked 20") {
		t.Errorf("a fork bomb made 20 processes under a step's RLIMIT_NPROC 5: %+v %q", res, out)
	}
	res, out = execOut(t, ss, shellStep(`sleep 1; grep "Max processes" /proc/$$/limits`))
	if f := strings.Fields(out); res.ExitCode != 0 || len(f) < 3 || f[2] == stepN[2] {
		t.Errorf("the next step got the last one's limit: %+v %q", res, out)
	}
}
