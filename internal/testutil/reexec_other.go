//go:build !linux

package testutil

import (
	"os/exec"
	"testing"
)

// AsNobody skips t: running a test binary as another user is for the
// Linux sandbox's rootless claims.
func AsNobody(t testing.TB, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	t.Skip("testutil: re-running as nobody needs Linux")
	return cmd
}

// AsNobodyInGroups skips t, as AsNobody does.
func AsNobodyInGroups(t testing.TB, cmd *exec.Cmd, groups ...uint32) *exec.Cmd {
	t.Helper()
	return AsNobody(t, cmd)
}

// RunTestAsNobody skips t, as AsNobody does.
func RunTestAsNobody(t testing.TB, test string, env ...string) string {
	t.Helper()
	t.Skip("testutil: re-running as nobody needs Linux")
	return ""
}

// RunTestAsNobodyInGroups skips t, as AsNobody does.
func RunTestAsNobodyInGroups(t testing.TB, test string, groups []uint32, env ...string) string {
	t.Helper()
	return RunTestAsNobody(t, test, env...)
}
