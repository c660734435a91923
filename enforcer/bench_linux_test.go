package enforcer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

// BenchmarkSessionExec is one allowed step of /bin/true in a live session
// through the library, as bench/session times it: the decision, its
// synced audit record, the step in the session's sandbox, the outcome
// record, the result. Beside sandbox's BenchmarkSessionExec (the step
// alone) and audit's BenchmarkPeerWriteFdatasync (the sync alone) it
// shows what the enforcer adds; with -cpuprofile, where.
func BenchmarkSessionExec(b *testing.B) {
	testutil.RequireRoot(b)
	pol, err := policy.Parse("bench.json", []byte(`{"toolScopes": {"bench": {"allow": [{"name": "true", "command": "/bin/true"}]}}}`))
	if err != nil {
		b.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	e, err := enforcer.New(pol, log, enforcer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := e.OpenSession(ctx, enforcer.SessionRequest{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	st := enforcer.StepRequest{Tool: "bench", Command: "/bin/true"}
	for b.Loop() {
		if res, err := s.Exec(ctx, st); err != nil || res.ExitCode != 0 {
			b.Fatalf("step: %v %+v", err, res)
		}
	}
}

// BenchmarkPeerExec is the floor under a step's run: /bin/true started
// (fork and exec, as Go's runtime does them: a vfork-like clone) and
// waited for, nothing else.
func BenchmarkPeerExec(b *testing.B) {
	for b.Loop() {
		runTrue(b)
	}
}

// runTrue starts /bin/true and waits for it.
func runTrue(b *testing.B) {
	pid, err := syscall.ForkExec("/bin/true", []string{"/bin/true"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		b.Fatal(err, ws)
	}
}

// BenchmarkPeerSyncThenExec is the floor under a step whose decision is
// durable before it runs, done the plainest way: one line written to a
// file and fdatasync'd, then /bin/true started and waited for.
func BenchmarkPeerSyncThenExec(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte(strings.Repeat("x", 600) + "\n") // about a decision record's length
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
		runTrue(b)
	}
}
