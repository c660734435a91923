package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestSessionCopyIn gives a session started without a workspace its
// workspace afterwards, as a pool's sandbox gets it when handed out: the
// files, modes and links arrive, Changes compares with them, and a second
// copy-in, or one after a step, is refused.
func TestSessionCopyIn(t *testing.T) {
	testutil.RequireRoot(t)
	testSessionCopyIn(t)
}

// testSessionCopyIn is TestSessionCopyIn's body, run rootless too
// (TestRootlessInner).
func testSessionCopyIn(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755)
	os.Symlink("src/main.go", filepath.Join(ws, "link"))
	ss := startSession(t, Config{})
	if err := ss.CopyIn(ws); err != nil {
		t.Fatalf("CopyIn: %v", err)
	}
	res, out := execOut(t, ss, shellStep("cat src/main.go; ./run.sh; readlink link; echo new > added"))
	if res.ExitCode != 0 || out != "package main\nran\nsrc/main.go\n" {
		t.Fatalf("step: %+v %q", res, out)
	}
	p, err := ss.Changes(changes.Options{Limits: changes.Limits{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 1 || p.Files[0].Path != "added" {
		t.Fatalf("changes against the copied-in original: %+v", p.Files)
	}
	if err := ss.CopyIn(ws); err == nil || !strings.Contains(err.Error(), "has its workspace already") {
		t.Fatalf("a second copy-in: %v", err)
	}
}

// TestSessionCopyInTooBig refuses a workspace over the disk cap and ends
// the session: its /workspace may be half filled.
func TestSessionCopyInTooBig(t *testing.T) {
	testutil.RequireRoot(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "big"), make([]byte, 2<<20), 0o644)
	cfg := Config{Caps: testCaps()}
	cfg.Caps.DiskWriteBytes = 1 << 20
	ss := startSession(t, cfg)
	if err := ss.CopyIn(ws); err == nil {
		t.Fatal("a workspace over the disk cap was copied in")
	}
	if _, err := ss.Exec(t.Context(), shellStep("true")); err == nil {
		t.Fatal("the session went on after a failed copy-in")
	}
}
