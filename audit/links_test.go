package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNoWriteThroughLinks: what airlock writes beside a log never goes
// through a link planted there by whoever could write the log's
// directory: the checkpoint's temporary file, the runs directory (its
// claims, and the sweep's removals of claims it can lock).
func TestNoWriteThroughLinks(t *testing.T) {
	l, path := openTest(t, WithSigner(testSigner(t)))
	elsewhere := t.TempDir()
	victim := filepath.Join(elsewhere, "victim")
	stale := filepath.Join(elsewhere, "x.lock")
	for _, f := range []string{victim, stale} {
		if err := os.WriteFile(f, []byte("kept"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, path+CheckpointSuffix+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, path+RunsSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(denial("run_tests", "ls")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.BeginRun("run-1"); err == nil {
		t.Error("a run was claimed through the runs directory's link")
	}
	for _, f := range []string{victim, stale} {
		if b, err := os.ReadFile(f); string(b) != "kept" {
			t.Errorf("%s was written through a link: %q %v", f, b, err)
		}
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 2 {
		t.Errorf("the link's target holds %v, want the two files alone", ents)
	}
	if b, err := os.ReadFile(path + CheckpointSuffix); err != nil || len(b) == 0 {
		t.Errorf("the checkpoint beside the log: %q %v", b, err)
	}
}
