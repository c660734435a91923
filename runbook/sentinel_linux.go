package runbook

import (
	"os"
	"syscall"
)

// statExtra returns the change time and inode number of fi.
func statExtra(fi os.FileInfo) (ctimeNs int64, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano(), st.Ino
	}
	return 0, 0
}
