//go:build !linux

package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// Off Linux these checks, which read /proc and /sys/fs/cgroup there, find
// nothing left but macOS's sandbox directories: they exist so that the
// tests that call them build (GOOS=darwin go vet).

// CheckNoSandboxLeft fails t when the sandbox named id left its private
// directory behind (macOS's sandbox keeps everything of a session in one
// directory, airlock-<id>-*, in the temporary directory).
func CheckNoSandboxLeft(t testing.TB, id string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "airlock-"+id+"-*"))
	for _, d := range left {
		t.Errorf("the sandbox's directory %s was left behind", d)
	}
}

// EmptyCgroups is nil: this system has no cgroups.
func EmptyCgroups(id string) []string { return nil }

// CheckNoEmptyCgroupLeft checks nothing: this system has no cgroups.
func CheckNoEmptyCgroupLeft(t testing.TB, id string, before []string) {}

// StaleCanaries is nil: no sandbox's start-up probe runs on this system.
func StaleCanaries(parents ...string) []string { return nil }
