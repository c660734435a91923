//go:build linux || darwin

package doctor

import "golang.org/x/sys/unix"

// noFile returns the open-files limit (RLIMIT_NOFILE).
func noFile() (soft, hard uint64, err error) {
	var r unix.Rlimit
	err = unix.Getrlimit(unix.RLIMIT_NOFILE, &r)
	return r.Cur, r.Max, err
}
