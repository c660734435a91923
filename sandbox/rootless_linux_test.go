package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

const rootlessEnv = "AIRLOCK_TEST_ROOTLESS"

// TestRootless re-runs this test binary as uid 65534, where
// TestRootlessInner starts sandboxes through an unprivileged user
// namespace.
func TestRootless(t *testing.T) {
	out := testutil.RunTestAsNobody(t, "TestRootlessInner", rootlessEnv+"=1")
	t.Logf("rootless run:\n%s", out)
}

func TestRootlessInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	if os.Getenv(rootlessEnv) == "" {
		t.Skip("run by TestRootless")
	}
	testMemory = 1 << 44
	t.Run("probes", func(t *testing.T) {
		file, addr := canaries(t)
		res, out, errOut := run(t, payloadConfig("probe", file, addr))
		if res.ExitCode != 0 {
			t.Fatalf("result %+v, stderr %q", res, errOut)
		}
		var probes []ProbeResult
		if err := json.Unmarshal([]byte(out), &probes); err != nil {
			t.Fatalf("payload output %q: %v", out, err)
		}
		wantProbes(t, probes, seccompSkip()...)
		t.Logf("receipt: %v", res.Receipt)
	})
	t.Run("attacks", testAttacks)
	t.Run("holes", testHoles)
	t.Run("signals", testSignalsToInit)
	t.Run("unix-socket", testHostUnixSocketUnreachable)
	t.Run("mptcp", testMPTCPRefused)
	t.Run("real-path", testRealPathRefused)
	t.Run("identity", testOwnIdentity)
	t.Run("copy-in", testSessionCopyIn)
	t.Run("workspace-program", testWorkspaceProgram)
	t.Run("init-output", testInitOutput)
	t.Run("user-counts", testUserCounts)
	t.Run("wall", func(t *testing.T) {
		cfg := payloadConfig("sleep")
		cfg.Caps.Wall = time.Second
		res, out := runContained(t, cfg)
		if res.KilledBy != "wall" {
			t.Fatalf("result %+v (output %q), want killed by wall", res, out)
		}
	})
	t.Run("daemon", func(t *testing.T) {
		res, out := runContained(t, payloadConfig("daemon", "1000"))
		if res.ExitCode != 0 {
			t.Fatalf("result %+v, output %q", res, out)
		}
	})
	t.Run("session", func(t *testing.T) {
		ss := startSession(t, Config{})
		res, out := execOut(t, ss, shellStep("echo kept > /tmp/state; id -u"))
		if res.ExitCode != 0 || !strings.Contains(out, "65534") {
			t.Fatalf("step 1: %+v %q", res, out)
		}
		res, out = execOut(t, ss, shellStep("cat /tmp/state"))
		if res.ExitCode != 0 || out != "kept\n" {
			t.Fatalf("step 2: %+v %q", res, out)
		}
		st := payloadStep("sleep")
		st.Caps = &StepCaps{Wall: 300 * time.Millisecond, CPU: time.Second}
		if res, _ := execOut(t, ss, st); res.KilledBy != "wall" {
			t.Fatalf("sleeper: %+v, want killed by wall", res)
		}
		if _, err := ss.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
	t.Run("caps", func(t *testing.T) {
		t.Run("disk", testDiskCapTotal)
		t.Run("inodes", testDiskInodeCap)
		t.Run("cpu", testCPUCapAttributed)
		t.Run("output", testOutputCap)
	})
	t.Run("findings", testFindingsRootless)
	t.Run("root", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "rootfs")
		writeRootfs(t, root, rootfsFiles(t))
		checkRootProbe(t, runInRoot(t, root))
	})
	t.Run("require", func(t *testing.T) {
		cfg := payloadConfig("exit")
		cfg.Require = []string{"cgroup-memory"}
		s, err := Start(context.Background(), cfg)
		if err == nil {
			s.Kill()
			t.Skip("this host delegates a memory cgroup to uid 65534")
		}
		if !errors.Is(err, ErrRequirement) {
			t.Fatalf("Start = %v, want ErrRequirement", err)
		}
	})
}
