package testutil

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// namespacesEnv marks the re-run that RunTestInNamespaces starts.
const namespacesEnv = "AIRLOCK_TEST_IN_NAMESPACES"

// InNamespaces reports whether this process is a re-run started by
// RunTestInNamespaces: the test then does its work in the namespaces it was
// given instead of starting another re-run.
func InNamespaces() bool { return os.Getenv(namespacesEnv) == "1" }

// RunTestInNamespaces re-runs the calling test binary with only the test
// named test selected, in new namespaces (flags: syscall.CLONE_NEWNET,
// CLONE_NEWNS, ...; with CLONE_NEWNS the new mount tree is private), with
// env added, and fails t unless that test ran and passed. It needs root. A
// test that must change what it may not change on a shared host (its
// network, /etc/resolv.conf) does it this way, and everything it made goes
// with the namespaces when the re-run exits.
func RunTestInNamespaces(t testing.TB, test string, flags uintptr, env ...string) string {
	t.Helper()
	RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testutil: find the test binary: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, namespacesEnv+"=1", "GORACE=atexit_sleep_ms=0")...)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: flags}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s in new namespaces: %v\n%s", test, err, out)
	}
	return string(out)
}
