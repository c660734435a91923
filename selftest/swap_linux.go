package selftest

import "golang.org/x/sys/unix"

// swap exchanges two paths atomically (renameat2 RENAME_EXCHANGE).
func swap(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
