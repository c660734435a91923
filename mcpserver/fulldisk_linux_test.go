package mcpserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestAuditFailures runs a client's calls with the audit log's disk
// full: a call whose decision cannot be made durable runs nothing and
// says why, the sandbox session's teardown cannot be recorded either, and
// each lost record is an "audit: error" notice as it happens; Close's
// error wraps enforcer.ErrAudit, so that airlock mcp exits 74. Before,
// the operator saw none of it and the server exited 0.
func TestAuditFailures(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, testPolicy)
	f.Audit = filepath.Join(testutil.SmallTmpfs(t, 64<<10), "audit.jsonl")
	var notes syncBuffer
	srv, done, err := build(f.setup, &notes)
	must(t, err)
	defer done()
	cs := memoryClient(t, srv, "full-disk")
	if r, _ := run(t, cs, "shell", "sh", "-c", "true"); r.IsError {
		t.Fatalf("the first call: %s", text(r))
	}
	free := testutil.FillDisk(t, filepath.Dir(f.Audit), func() error {
		l, err := audit.Open(f.Audit)
		if err != nil {
			return err
		}
		defer l.Close()
		_, err = l.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "filler"})
		return err
	})
	ran := filepath.Join(f.dir, "ran")
	r, res := run(t, cs, "shell", "sh", "-c", "touch "+ran)
	if !r.IsError || res.ExitCode != enforcer.ExitSetup || !strings.HasPrefix(res.AuditError, "the command allow record was not written") {
		t.Errorf("a call on the full disk: %+v\n%s", res, text(r))
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a call whose decision was not durable ran")
	}
	must(t, cs.Close())
	err = srv.Close(context.Background())
	free()
	if !errors.Is(err, enforcer.ErrAudit) {
		t.Errorf("Close: %v; want ErrAudit", err)
	}
	for _, want := range []string{
		": audit: error: the command allow record was not written: audit: write " + f.Audit + ": no space left on device",
		": audit: error: the lifecycle sandbox_torn_down record was not written: ",
	} {
		if !strings.Contains(notes.String(), want) {
			t.Errorf("no notice %q:\n%s", want, notes.String())
		}
	}
}
