//go:build unix

package seatbelt

import (
	"io/fs"
	"syscall"
)

// allocated is the space a file takes: its blocks, at least its length
// (a sparse file is charged its length: it may be filled in).
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return max(int64(st.Blocks)*512, fi.Size())
	}
	return fi.Size()
}
