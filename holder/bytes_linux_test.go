package holder_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestHolderBytesExact: the paths session start checked and the argv a
// client sends reach the holder byte for byte, UTF-8 or not: JSON alone
// would turn each \xff into U+FFFD, so the holder would audit to, copy
// in and run something else than what was checked and decided.
func TestHolderBytesExact(t *testing.T) {
	testutil.RequireRoot(t)
	dir, tmp := privateDir(t), t.TempDir()
	ws := filepath.Join(tmp, "ws\xff")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "f"), []byte("from ws\xff"), 0o644)
	auditFile := filepath.Join(tmp, "audit\xff.jsonl")
	info, err := holder.Start(context.Background(), holder.Config{Dir: dir, PolicyName: "test.json", Policy: []byte(testPolicy),
		Audit: auditFile, Session: enforcer.SessionRequest{Workspace: ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(dir, info.ID) })
	c, err := holder.Dial(dir, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st := sh(`printf '%s|' "$1" "$RAW"; cat f`, &out)
	st.Args = append(st.Args, "sh", "a\xfeb")
	st.Env = []string{"RAW=\xff"}
	if res, err := execStep(t, c, st); err != nil || res.ExitCode != 0 {
		t.Fatalf("step: %+v %v %q", res, err, out.String())
	}
	if want := "a\xfeb|\xff|from ws\xff"; out.String() != want {
		t.Errorf("step printed %q, want %q", out.String(), want)
	}
	if _, err := os.Stat(auditFile); err != nil {
		t.Errorf("the audit log named: %v", err)
	}
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "audit\xff.jsonl") && e.Name() != "ws\xff" {
			t.Errorf("%s holds %q: not the workspace, the audit log or its files", tmp, e.Name())
		}
	}
}
