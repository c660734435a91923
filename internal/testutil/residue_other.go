//go:build !linux

package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// CheckNoSandboxLeft fails t when the sandbox named id left its private
// directory behind (macOS's sandbox keeps everything of a session in
// one directory, airlock-<id>-*, in the temporary directory).
func CheckNoSandboxLeft(t testing.TB, id string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "airlock-"+id+"-*"))
	for _, d := range left {
		t.Errorf("the sandbox's directory %s was left behind", d)
	}
}

// EmptyCgroups returns nil: there are no cgroups off Linux.
func EmptyCgroups(id string) []string { return nil }

// CheckNoEmptyCgroupLeft does nothing: there are no cgroups off Linux.
func CheckNoEmptyCgroupLeft(t testing.TB, id string, before []string) {}
