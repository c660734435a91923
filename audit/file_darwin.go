package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes the bytes written to f durable. On macOS fsync only
// hands them to the drive, whose cache may still lose them; F_FULLFSYNC
// asks the drive to write its cache out too. A file system that has no
// F_FULLFSYNC (some network and FAT ones) gets fsync. A variable so that
// a test can count it.
var syncData = func(f *os.File) error {
	err := retryEINTR("fcntl F_FULLFSYNC", func() error {
		_, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0)
		return err
	})
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) {
		return retryEINTR("fsync", func() error { return unix.Fsync(int(f.Fd())) })
	}
	return err
}
