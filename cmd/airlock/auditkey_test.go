package main

import (
	"os"
	"path/filepath"
	"testing"
)

// privateKey gives the test a signing key of its own, in a fresh private
// directory: no test signs with, or creates, the host's.
func privateKey(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	t.Setenv("AIRLOCK_AUDIT_KEY", filepath.Join(dir, "signing.key"))
}
