package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestWorkspaceProgram: a step's workspace program is resolved by the
// init in its tree, links followed only inside it, and run by the path
// of the file found, which the result names; a link out of the tree, a
// file that is not an executable regular file, or none, does not start.
func TestWorkspaceProgram(t *testing.T) {
	testutil.RequireRoot(t)
	testWorkspaceProgram(t)
}

// testWorkspaceProgram is TestWorkspaceProgram's body, run rootless too
// (TestRootlessInner).
func testWorkspaceProgram(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "bin"), 0o755)
	os.WriteFile(filepath.Join(ws, "bin", "tool.sh"), []byte("#!/bin/sh\necho \"tool from $0\"\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "data.txt"), []byte("data\n"), 0o644)
	for link, to := range map[string]string{"in": "bin/tool.sh", "out": "/bin/sh", "up": "../bin/sh", "abs-in": "/workspace/bin/tool.sh", "bin/python3": "/usr/bin/python3"} {
		os.Symlink(to, filepath.Join(ws, link))
	}
	ss := startSession(t, Config{})
	if err := ss.CopyIn(ws); err != nil {
		t.Fatal(err)
	}
	program := func(tree, p string) Step {
		return Step{Path: p, Tree: tree, Args: []string{"x"}, Env: []string{"PATH=/usr/bin:/bin"}}
	}
	for _, c := range []struct{ path, ran string }{
		{"/workspace/bin/tool.sh", "/workspace/bin/tool.sh"},
		{"/workspace/in", "/workspace/bin/tool.sh"},
	} {
		res, out := execOut(t, ss, program(WorkspaceDir, c.path))
		if res.ExitCode != 0 || res.Path != c.ran || out != "tool from "+c.ran+"\n" {
			t.Errorf("%s: exit %d path %q output %q", c.path, res.ExitCode, res.Path, out)
		}
	}
	if res, out := execOut(t, ss, shellStep("printf '#!/bin/sh\\necho tmp\\n' > /tmp/t.sh && chmod +x /tmp/t.sh")); res.ExitCode != 0 {
		t.Fatalf("write /tmp/t.sh: %+v %q", res, out)
	}
	if res, out := execOut(t, ss, program(TmpDir, "/tmp/t.sh")); res.ExitCode != 0 || res.Path != "/tmp/t.sh" || out != "tmp\n" {
		t.Errorf("/tmp/t.sh: exit %d path %q output %q", res.ExitCode, res.Path, out)
	}
	for _, c := range []struct{ path, why string }{
		{"/workspace/out", "/workspace/out leads out of /workspace by a symbolic link"},
		{"/workspace/up", "/workspace/up leads out of /workspace by a symbolic link"},
		{"/workspace/abs-in", "/workspace/abs-in leads out of /workspace by a symbolic link"},
		{"/workspace/bin/python3", "its tree (a virtual environment made with python3 -m venv --copies holds its interpreter)"},
		{"/workspace/data.txt", "/workspace/data.txt is not an executable regular file"},
		{"/workspace/bin", "/workspace/bin is not an executable regular file"},
		{"/workspace/none", "/workspace/none: no such file or directory"},
	} {
		res, err := ss.Exec(context.Background(), program(WorkspaceDir, c.path))
		if !errors.Is(err, ErrStepStart) || !strings.Contains(err.Error(), c.why) || res.Path != "" {
			t.Errorf("%s: %v, path %q; want it not started: %s", c.path, err, res.Path, c.why)
		}
	}
	if _, err := ss.Exec(context.Background(), program(WorkspaceDir, "/workspace/out")); err == nil || strings.Contains(err.Error(), "venv") {
		t.Errorf("a link out that is not a python names a venv: %v", err)
	}
	if _, err := ss.Exec(context.Background(), program("/etc", "/etc/passwd")); err == nil || !strings.Contains(err.Error(), `tree "/etc"`) {
		t.Errorf("a tree that is not the sandbox's: %v", err)
	}
}
