package audit

import "golang.org/x/sys/unix"

// exchange swaps the files at a and b in one step (renamex_np with
// RENAME_SWAP, macOS's RENAME_EXCHANGE).
func exchange(a, b string) error {
	return unix.RenamexNp(a, b, unix.RENAME_SWAP)
}
