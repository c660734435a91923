package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// hideBase holds the test's directories: the sandbox makes its own /tmp,
// so it cannot be shown one under the host's.
const hideBase = "/var/tmp"

// secretMarkers are what the sandbox must never read; it must read the
// files marked "visible-…" beside them (else the test shows nothing).
var secretMarkers = []string{"policy-marker", "args-marker", "sibling-marker", "evidence-marker", "plan-marker"}

// TestHiddenFiles: the policy, the audit log (with what an earlier run
// wrote into it), a file beside the log and airlock's state directory are
// hidden from a sandbox that is shown the directory holding them (and,
// in a launch, the plan), when
// --policy and --audit are given as relative paths and when the log is
// reached through a symbolic link: a real cat from inside, through every
// path. As root here; TestHiddenFilesRootless as uid 65534.
func TestHiddenFiles(t *testing.T) {
	testutil.RequireRoot(t)
	bin, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(hideBase, "airlock-hide-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	checkHidden(t, dir, func(args ...string) *exec.Cmd { return exec.Command(bin, args...) }, 0)
}

// TestHiddenFilesRootless is TestHiddenFiles for an unprivileged caller,
// whose sandbox's uid maps to the caller's own: the log (mode 0600) is
// the caller's, so only the hiding keeps it from the sandbox.
func TestHiddenFilesRootless(t *testing.T) {
	testutil.RequireRoot(t)
	bin, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", hideBase) // AsNobody's directory
	var dir string
	checkHidden(t, "", func(args ...string) *exec.Cmd {
		cmd := testutil.AsNobody(t, exec.Command(bin, args...))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "TMPDIR=/tmp"}
		if dir == "" {
			dir = cmd.Dir
		}
		cmd.Dir = dir
		return cmd
	}, testutil.NobodyID)
}

// checkHidden lays the files out in dir (the first command's directory
// when dir is ""), owned by uid, and runs airlock through command there.
func checkHidden(t *testing.T, dir string, command func(args ...string) *exec.Cmd, uid int) {
	t.Helper()
	if dir != "" {
		layOut(t, dir, uid)
	}
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := command(args...)
		if dir == "" {
			dir = cmd.Dir
			layOut(t, dir, uid)
		}
		cmd.Dir = dir
		cmd.Env = append(cmd.Env, "AIRLOCK_POLICY=", "XDG_STATE_HOME="+filepath.Join(dir, "xdg"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// An earlier run leaves its arguments in the log.
	out, _ := run("run", "--policy", "policy.json", "--audit", "state/audit.jsonl", "--tool", "t", "--", "cat", "/args-marker")
	log := filepath.Join(dir, "state", "audit.jsonl")
	b, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(b), "args-marker") || !strings.Contains(string(b), "policy-marker") {
		t.Fatalf("the first run did not write the log (%v):\n%s", err, out)
	}
	if err := os.Chmod(log, 0o644); err != nil { // readable by the sandbox's uid, if it could see it
		t.Fatal(err)
	}
	// The sandbox is shown dir itself, and reads through every name.
	paths := []string{"policy.json", "state/audit.jsonl", "state/audit.jsonl.lock", "link/audit.jsonl",
		"xdg/airlock/evidence/e.txt", "visible.txt"}
	out, _ = run(append([]string{"run", "--policy", "policy.json", "--audit", "state/audit.jsonl", "--tool", "t", "--", "cat"},
		abs(dir, paths)...)...)
	check(t, "shown the directory", out, "visible-marker")
	// So is the plan, in a launch.
	plan, _ := json.Marshal(map[string]any{"testId": "T-hide", "description": "plan-marker",
		"steps": []map[string]any{{"tool": "t", "command": "cat", "args": abs(dir, append(paths, "plan.json")), "continueOnFailure": true}}})
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), plan, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(filepath.Join(dir, "plan.json"), uid, uid); err != nil {
		t.Fatal(err)
	}
	out, _ = run("launch", "--policy", "policy.json", "--audit", "state/audit.jsonl", "--plan", "plan.json")
	check(t, "a launch shown the directory", out, "visible-marker")
	// The sandbox is shown the log's directory through a path with a
	// symbolic link in it (alias -> .). A refusal of that path holds too.
	paths = []string{"alias/state/audit.jsonl", "alias/state/audit.jsonl.lock", "alias/state/visible.txt"}
	out, err = run(append([]string{"run", "--policy", "policy-alias.json", "--audit", "state/audit.jsonl", "--tool", "t", "--", "cat"},
		abs(dir, paths)...)...)
	if !strings.Contains(out, "airlock: setup: error:") {
		check(t, "shown the log's directory through a link", out, "visible-alias-marker")
	} else {
		t.Logf("refused: %v\n%s", err, out)
	}
}

func check(t *testing.T, what, out, visible string) {
	t.Helper()
	for _, m := range secretMarkers {
		if strings.Contains(out, m) {
			t.Errorf("%s: the sandbox read %s:\n%s", what, m, out)
		}
	}
	if !strings.Contains(out, visible) {
		t.Errorf("%s: the sandbox could not read %s, so the test shows nothing:\n%s", what, visible, out)
	}
}

func abs(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Join(dir, p)
	}
	return out
}

// layOut writes the policies, the files beside the log, the state
// directory's evidence and the links, owned by uid.
func layOut(t *testing.T, dir string, uid int) {
	t.Helper()
	policy := func(shown string) string {
		return fmt.Sprintf(`{"toolScopes": {"t": {"allow": [{"name": "cat-policy-marker", "command": "cat", "allowExtraArgs": true}]}},
 "filesystem": {"readOnly": ["/usr", "/bin", "/lib", "/lib64", "/etc", %q]}}`, shown)
	}
	files := map[string]string{
		"policy.json":                policy(dir),
		"policy-alias.json":          policy(filepath.Join(dir, "alias", "state")),
		"state/audit.jsonl.lock":     "sibling-marker\n",
		"state/visible.txt":          "visible-alias-marker\n",
		"xdg/airlock/evidence/e.txt": "evidence-marker\n",
		"visible.txt":                "visible-marker\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link": "state", "alias": "."} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}
