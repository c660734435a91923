//go:build linux || darwin

package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// noFollow makes Open refuse a symbolic link as the log file itself.
const noFollow = unix.O_NOFOLLOW

// lockFile takes an exclusive flock on f, waiting for other writers. The
// lock belongs to f's open file description: two Logs on one file, in one
// process or several, exclude each other.
func lockFile(f *os.File) error {
	return retryEINTR("flock", func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) })
}

// tryLock takes an exclusive flock on f without waiting.
func tryLock(f *os.File) error {
	return retryEINTR("flock", func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
}

// unlockFile releases the lock taken by lockFile.
func unlockFile(f *os.File) error {
	return retryEINTR("flock", func() error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) })
}

func retryEINTR(name string, fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return os.NewSyscallError(name, err)
			}
			return nil
		}
	}
}
