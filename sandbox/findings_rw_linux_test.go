package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestFindingsInsideReadWriteRefused: a findings directory inside a tree
// bound writable is refused before anything runs, however it is named
// (through a link too): the sandbox could write there directly, past
// every rule of the copy-out (links, exec bits, .git).
func TestFindingsInsideReadWriteRefused(t *testing.T) {
	testutil.RequireRoot(t)
	// Outside /tmp, which the sandbox makes itself.
	rw, err := os.MkdirTemp("/var/tmp", "airlock-rw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rw) })
	link := rw + "-link"
	os.Symlink(rw, link)
	t.Cleanup(func() { os.Remove(link) })
	for _, findings := range []string{rw, filepath.Join(rw, "out"), filepath.Join(rw, "a", "b")} {
		cfg := shellConfig("true")
		cfg.ReadWrite, cfg.Findings = []string{link}, findings
		if s, err := Start(context.Background(), cfg); err == nil {
			s.Kill()
			t.Errorf("findings %s inside readWrite %s: started", findings, link)
		} else if !strings.Contains(err.Error(), "which the policy's readWrite binds writable") {
			t.Errorf("findings %s: %v", findings, err)
		}
	}
	if ents, _ := os.ReadDir(rw); len(ents) != 0 {
		t.Errorf("the refused runs left %v in the tree", ents)
	}
	ss := startSession(t, Config{ReadWrite: []string{rw}})
	if err := ss.SetFindings(filepath.Join(rw, "out")); err == nil || !strings.Contains(err.Error(), "readWrite") {
		t.Errorf("SetFindings inside readWrite: %v", err)
	}
}

// TestSetFindings: findings named only when a session stops reach that
// directory (they were dropped: the destination was opened at the start
// alone), and the directory the start made for them is removed unused.
func TestSetFindings(t *testing.T) {
	testutil.RequireRoot(t)
	first, later := filepath.Join(t.TempDir(), "first"), filepath.Join(t.TempDir(), "later")
	ss := startSession(t, Config{Findings: first})
	if res, out := execOut(t, ss, shellStep("echo kept > /findings/report.txt")); res.ExitCode != 0 {
		t.Fatalf("step: %+v %q", res, out)
	}
	if err := ss.SetFindings(later); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(later, "report.txt")); string(b) != "kept\n" {
		t.Errorf("later/report.txt: %q %v", b, err)
	}
	if _, err := os.Lstat(first); !os.IsNotExist(err) {
		t.Errorf("the start's findings directory is still there: %v", err)
	}
}

// TestReadWriteHoldingHiddenRefused: a readWrite tree that holds a
// hidden file's directory (an audit log's: the sandbox could plant its
// checkpoint's temporary file as a link, or rename the directory and put
// its own log or policy in its place) is refused, and so is any tree
// inside a hidden directory; a hidden file in a read-only tree is masked
// as before.
func TestReadWriteHoldingHiddenRefused(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "airlock-rw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	logs := filepath.Join(dir, "logs")
	os.MkdirAll(filepath.Join(logs, "sub"), 0o755)
	log := filepath.Join(logs, "audit.jsonl")
	os.WriteFile(log, nil, 0o600)
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"rw holds the log's directory", Config{ReadWrite: []string{logs}}, "holds"},
		{"rw holds it higher up", Config{ReadWrite: []string{dir}}, "holds"},
		{"tree inside a hidden directory", Config{ReadOnly: []string{filepath.Join(logs, "sub")}}, "lies inside"},
		{"read-only tree: masked", Config{ReadOnly: []string{dir}}, ""},
		{"rw beside it", Config{ReadWrite: []string{filepath.Join(logs, "sub")}}, ""},
	} {
		cfg := c.cfg
		cfg.Path, cfg.Caps = "/bin/true", testCaps()
		hidden := []string{log}
		if c.want == "lies inside" {
			hidden = []string{logs}
		}
		cfg.HideFiles(hidden...)
		_, err := normalize(cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
