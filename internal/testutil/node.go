package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireNodeModules skips the test unless node is on PATH and dir holds
// the node_modules its package-lock.json installs (`npm ci` in dir; CI's
// .ci/run does it), and returns node's path. The fast tier skips it.
func RequireNodeModules(t testing.TB, dir string) string {
	t.Helper()
	SkipShort(t, "runs a Node.js program")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("needs node on PATH (CI installs it and runs the test for real)")
	}
	if fi, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil || !fi.IsDir() {
		t.Skipf("needs %s/node_modules: run npm ci there (.ci/run does)", dir)
	}
	return node
}
