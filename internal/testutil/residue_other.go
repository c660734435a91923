//go:build !linux

package testutil

import "testing"

// Sandboxes run on Linux only: elsewhere no sandbox ran, and these checks,
// which read /proc and /sys/fs/cgroup, find nothing left. They exist so
// that the tests that call them build (GOOS=darwin go vet).

// CheckNoSandboxLeft checks nothing: no sandbox runs on this system.
func CheckNoSandboxLeft(t testing.TB, id string) {}

// EmptyCgroups is nil: this system has no cgroups.
func EmptyCgroups(id string) []string { return nil }

// CheckNoEmptyCgroupLeft checks nothing: this system has no cgroups.
func CheckNoEmptyCgroupLeft(t testing.TB, id string, before []string) {}

// StaleCanaries is nil: no sandbox's start-up probe runs on this system.
func StaleCanaries(parents ...string) []string { return nil }
