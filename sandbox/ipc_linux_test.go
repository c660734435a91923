package sandbox

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
)

// TestSysVIPCBounded: from inside, SysV IPC gives no more than the
// namespace's limits: shared memory no more than the memory cap and
// none of it kept once detached, a few small message queues, a few
// semaphore sets. With the kernel's defaults the payload took 32,000
// queues of 16 KiB of kernel memory and kept every detached segment.
func TestSysVIPCBounded(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := payloadConfig("airlock", "sysv-ipc", "64")
	cfg.Caps.MemoryBytes = 128 << 20
	res, out, errOut := run(t, cfg)
	reps := payload.Parse([]byte(out))
	if res.ExitCode != 0 || len(reps) != 1 {
		t.Fatalf("result %+v, output %q %q", res, out, errOut)
	}
	d := reps[0].Detail
	t.Logf("%v; receipt %q", d, res.Receipt["ipc"])
	atMost := func(k string, n int) {
		if v, err := strconv.Atoi(d[k]); err != nil || v > n {
			t.Errorf("%s = %q, want at most %d", k, d[k], n)
		}
	}
	atMost("shm_kept", 0)
	atMost("shm_segments", 64)
	atMost("msg_queues", 16)
	atMost("msg_bytes", 16*16384)
	atMost("sem_sets", 128)
	if d["shm_1tib"] != "EINVAL" {
		t.Errorf("a 1 TiB segment: %q, want EINVAL (over shmmax)", d["shm_1tib"])
	}
}

// TestSysVIPCRootless: rootless, where the parent cannot set the IPC
// namespace's limits, SysV IPC is refused when no memory cgroup counts
// what it keeps, and left to the memory cgroup otherwise. Before, the
// payload took 32,000 message queues and kept every detached segment,
// counted by nothing.
func TestSysVIPCRootless(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RunTestAsNobody(t, "TestSysVIPCRootlessInner", rootlessEnv+"=1")
}

func TestSysVIPCRootlessInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	if os.Getenv(rootlessEnv) == "" {
		t.Skip("run by TestSysVIPCRootless")
	}
	// RLIMIT_DATA without a cgroup: the race detector's shadow needs room.
	cfg := payloadConfig("airlock", "sysv-ipc", "64")
	cfg.Caps.MemoryBytes = 1 << 44
	res, out, errOut := run(t, cfg)
	reps := payload.Parse([]byte(out))
	if res.ExitCode != 0 || len(reps) != 1 {
		t.Fatalf("result %+v, output %q %q", res, out, errOut)
	}
	d, receipt := reps[0].Detail, res.Receipt["ipc"]
	t.Logf("%v; receipt %q; memory %q", d, receipt, res.Receipt["memory"])
	if !strings.HasPrefix(res.Receipt["memory"], "cgroup") {
		for _, k := range []string{"shm_kept", "shm_segments", "msg_queues", "sem_sets"} {
			if d[k] != "0" {
				t.Errorf("%s = %q without a memory cgroup, want 0 (refused)", k, d[k])
			}
		}
		for _, k := range []string{"shm_touch_stop", "shm_1tib", "msg_stop", "sem_stop"} {
			if d[k] != "ENOSYS" {
				t.Errorf("%s = %q, want ENOSYS", k, d[k])
			}
		}
		if !strings.HasPrefix(receipt, "refused") {
			t.Errorf("receipt %q does not say SysV IPC is refused", receipt)
		}
	} else if !strings.Contains(receipt, "memory cgroup") {
		t.Errorf("receipt %q does not name the memory cgroup", receipt)
	}
}

// TestSysVIPCNotKept: a session's step that leaves shared memory
// segments detached leaves nothing of them for the next step.
func TestSysVIPCNotKept(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	if res, out := execOut(t, ss, payloadStep("airlock", "sysv-ipc", "16")); res.ExitCode != 0 {
		t.Fatalf("step 1: %+v %q", res, out)
	}
	res, out := execOut(t, ss, payloadStep("airlock", "sysv-ipc-count"))
	reps := payload.Parse([]byte(out))
	if res.ExitCode != 0 || len(reps) != 1 {
		t.Fatalf("step 2: %+v %q", res, out)
	}
	if d := reps[0].Detail; d["shm"] != "0" {
		t.Errorf("step 2 found %v: the segments step 1 detached were kept", d)
	}
}
