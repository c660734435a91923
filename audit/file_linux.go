package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes the bytes written to f durable (fdatasync: the data and
// the size, not the timestamps). A variable so that a test can count it.
var syncData = func(f *os.File) error {
	return retryEINTR("fdatasync", func() error { return unix.Fdatasync(int(f.Fd())) })
}
