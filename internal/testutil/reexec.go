//go:build unix

package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// NobodyID is the uid and gid that rootless tests run as.
const NobodyID = 65534

// SelfCommand returns a command that re-runs the test binary with env
// added to the environment and no test selected, so that a TestMain can
// act on env (the runc and tailscale way of testing a process-wide
// change such as a seccomp filter or a privilege drop). Its working
// directory is a fresh temporary directory, so a core dump or a stray file
// cannot land in the package's source tree.
func SelfCommand(t testing.TB, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testutil: find the test binary: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	if os.Getenv("GORACE") == "" {
		// The race detector sleeps a second at exit by default.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.Dir = t.TempDir()
	return cmd
}
