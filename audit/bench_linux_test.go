package audit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkPeerWriteFdatasync is the floor under Append: one O_APPEND
// write of a line of the same length and an fdatasync, nothing else.
func BenchmarkPeerWriteFdatasync(b *testing.B) {
	_, lines := writeLog(b, 1)
	line := lines[1]
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
}
