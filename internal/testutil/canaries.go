//go:build unix

package testutil

import (
	"os"
	"path/filepath"
	"syscall"
)

// StaleCanaries lists the start-up probe canary directories whose owner
// is gone (their lock is free), in the places airlock makes them and in
// parents: a dead airlock's leftovers that the next run, or a session's
// watchdog, should have swept.
func StaleCanaries(parents ...string) []string {
	var stale []string
	for _, parent := range append(parents, os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm", os.TempDir()) {
		dirs, _ := filepath.Glob(filepath.Join(parent, "airlock-canary-*"))
		for _, d := range dirs {
			f, err := os.Open(filepath.Join(d, ".owner"))
			if err != nil {
				continue
			}
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				stale = append(stale, d)
			}
			f.Close()
		}
	}
	return stale
}
