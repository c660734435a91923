//go:build !linux

package runbook

import "os"

// statExtra returns nothing more on systems without a sandbox.
func statExtra(os.FileInfo) (ctimeNs int64, ino uint64) { return 0, 0 }
