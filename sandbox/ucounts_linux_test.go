package sandbox

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"golang.org/x/sys/unix"
)

// TestUserCountsBounded: the kernel counts inotify instances and watches
// per user at every level of user namespaces, the sandbox's owner's on
// the host included. A sandbox that took every instance it could (128)
// left its owner — host root, rootful — none: inotify_init failed on the
// host while it held them; one that took every watch it could took all
// 192,530 of host root's. Inside, they are bounded now, and the owner
// keeps its own.
func TestUserCountsBounded(t *testing.T) {
	testutil.RequireRoot(t)
	testUserCounts(t)
}

func testUserCounts(t *testing.T) {
	cfg := payloadConfig("airlock", "inotify-hog", "10")
	cfg.Caps.OpenFiles = 256
	s, out := holdingPayload(t, cfg, "inotify-hog")
	defer s.Kill()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Errorf("the sandbox's owner cannot make an inotify instance while the sandbox holds its own: %v", err)
	} else {
		if _, err := unix.InotifyAddWatch(fd, t.TempDir(), unix.IN_CREATE); err != nil {
			t.Errorf("the sandbox's owner cannot add an inotify watch while the sandbox holds its own: %v", err)
		}
		unix.Close(fd)
	}
	reps := payload.Parse([]byte(out.String()))
	if len(reps) != 1 {
		t.Fatalf("output %q", out.String())
	}
	d := reps[0].Detail
	for k, most := range map[string]int{"instances": 16, "watches": 8192} {
		if n, err := strconv.Atoi(d[k]); err != nil || n > most {
			t.Errorf("%s: %q, want at most %d (%v)", k, d[k], most, d)
		}
	}
}

// TestQueuedSignalsBounded: real-time signals a sandbox queues to itself
// are counted against its owner's RLIMIT_SIGPENDING on the host too: one
// queued 96,363, all of host root's, so that no root process could be
// sent one. Bounded to 1024, it leaves the owner its own.
func TestQueuedSignalsBounded(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := payloadConfig("airlock", "rt-signals", "10")
	s, out := holdingPayload(t, cfg, "rt-signals")
	defer s.Kill()
	reps := payload.Parse([]byte(out.String()))
	if len(reps) != 1 {
		t.Fatalf("output %q", out.String())
	}
	if n, err := strconv.Atoi(reps[0].Detail["queued"]); err != nil || n > 1024 {
		t.Errorf("queued %v, want at most 1024", reps[0].Detail)
	}
}

// holdingPayload starts and releases a sandbox for cfg, whose payload
// reports attempt and then holds what it took, and waits (30 s at most)
// for the report: the sandbox is still running when it returns, its
// output in out. The caller kills it.
func holdingPayload(t *testing.T, cfg Config, attempt string) (*Sandbox, *testutil.SyncBuffer) {
	t.Helper()
	out := new(testutil.SyncBuffer)
	cfg.Stdout, cfg.Stderr = out, out
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), `"`+attempt+`"`) {
		if time.Now().After(deadline) {
			s.Kill()
			t.Fatalf("the payload did not report: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s, out
}
