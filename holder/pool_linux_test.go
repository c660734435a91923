package holder_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// startPool starts a pool holder of size n in dir, stopped at cleanup if
// it is still there.
func startPool(t *testing.T, dir, auditFile string, n int) holder.Info {
	t.Helper()
	info, err := holder.Start(context.Background(), holder.Config{Dir: dir, PolicyName: "test.json", Policy: []byte(testPolicy),
		Audit: auditFile, Pool: &holder.PoolSpec{Size: n}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.StopPool(dir) })
	return info
}

// waitPoolReady waits until the pool holder in dir has n sandboxes built.
func waitPoolReady(t *testing.T, dir string, n int) {
	t.Helper()
	waitFor(t, "the pool's sandboxes", func() bool {
		info, err := holder.PoolInfo(dir)
		return err == nil && info.Ready >= n
	})
}

// TestPoolHolder opens two sessions from a pool holder, each on a sandbox
// built ahead and served on its own socket as a holder of its own serves
// one: nothing of the first is visible to the second; stopping one
// leaves the other; stopping the pool closes the rest and leaves nothing.
func TestPoolHolder(t *testing.T) {
	testutil.RequireRoot(t)
	dir, auditFile := privateDir(t), filepath.Join(t.TempDir(), "audit.jsonl")
	pool := startPool(t, dir, auditFile, 1)
	if _, err := holder.OpenPooled(dir, enforcer.SessionRequest{}, "sha256:other"); err == nil || !strings.Contains(err.Error(), "decides under policy") {
		t.Fatalf("a session under another policy: %v", err)
	}
	exec := func(id, script string) string {
		t.Helper()
		c, err := holder.Dial(dir, id)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := c.Exec(context.Background(), sh(script, &out)); err != nil {
			t.Fatalf("exec in %s: %v", id, err)
		}
		return out.String()
	}
	var infos []holder.Info
	for i := range 2 {
		waitPoolReady(t, dir, 1)
		info, err := holder.OpenPooled(dir, enforcer.SessionRequest{}, pool.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if !info.BuiltAhead || info.Pid != pool.Pid {
			t.Fatalf("session %d: %+v, want built ahead, held by the pool holder %d", i+1, info, pool.Pid)
		}
		infos = append(infos, info)
	}
	if out := exec(infos[0].ID, "echo first > /tmp/mark; sleep 1000 & echo started"); out != "started\n" {
		t.Fatalf("first session: %q", out)
	}
	if out := exec(infos[1].ID, "cat /tmp/mark 2>/dev/null; ls /proc | grep -c '^[0-9]'"); strings.Contains(out, "first") {
		t.Fatalf("the second session sees the first's file: %q", out)
	}
	if list, err := holder.List(dir); err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	c, _ := holder.Dial(dir, infos[0].ID)
	if _, _, err := c.Stop(nil, nil); err != nil {
		t.Fatal(err)
	}
	if out := exec(infos[1].ID, "echo alive"); out != "alive\n" {
		t.Fatalf("second session after the first's stop: %q", out)
	}
	if _, err := holder.StopPool(dir); err != nil {
		t.Fatal(err)
	}
	// StopPool returns once the pool is gone: at once, nothing is left
	// of it, and a start asking for it is told so.
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the runtime directory: %v", entries)
	}
	if _, err := holder.OpenPooled(dir, enforcer.SessionRequest{}, pool.Policy); err == nil || !strings.Contains(err.Error(), "no session pool is running") {
		t.Errorf("a session from the stopped pool: %v", err)
	}
	for _, info := range infos {
		testutil.CheckNoSandboxLeft(t, info.ID)
	}
	testutil.CheckNoCgroupLeft(t, "sandbox-"+enforcer.PoolSandboxPrefix(pool.Pid))
	waitGone(t, pool.Watchdog)
}

// TestPoolHolderKilled kills a pool holder holding a session with
// SIGKILL: its watchdog removes the pool's and the session's sockets and
// locks and records the session's end; nothing of the sandboxes is left.
func TestPoolHolderKilled(t *testing.T) {
	testutil.RequireRoot(t)
	dir, auditFile := privateDir(t), filepath.Join(t.TempDir(), "audit.jsonl")
	pool := startPool(t, dir, auditFile, 1)
	waitPoolReady(t, dir, 1)
	info, err := holder.OpenPooled(dir, enforcer.SessionRequest{}, pool.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pool.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pool.Watchdog)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the runtime directory: %v", entries)
	}
	testutil.CheckNoSandboxLeft(t, info.ID)
	testutil.CheckNoCgroupLeft(t, "sandbox-"+enforcer.PoolSandboxPrefix(pool.Pid))
	b, _ := os.ReadFile(auditFile)
	if !bytes.Contains(b, []byte("session "+info.ID+" ended: its holder (pid")) {
		t.Errorf("no teardown record of %s after its pool holder died", info.ID)
	}
}
