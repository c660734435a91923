//go:build unix

package canary

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockCanary creates dir's owner file and takes its lock.
func lockCanary(dir string) (*os.File, error) {
	// Locked under a temporary name, then renamed into place: a sweep in
	// another airlock opens only canaryLock, and so never finds the file
	// between its creation and its lock, thinks its owner dead, and
	// removes a live canary.
	f, err := os.CreateTemp(dir, canaryLock+"-")
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, canaryLock)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepCanaries removes the canary directories under parent ("" for the
// system's temporary directory) whose owner died without removing them
// (an airlock killed with SIGKILL): their lock is free. A live canary's
// lock is held, and a directory without an owner file is left alone.
func sweepCanaries(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, canaryPrefix+"*"))
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, canaryLock), os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.RemoveAll(d)
		}
		f.Close()
	}
}
