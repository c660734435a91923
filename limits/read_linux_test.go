package limits

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadBounded: a file is read whole up to maxFile bytes and no more,
// and a FIFO where a kernel file was expected gives nothing at once
// instead of blocking.
func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 513, 4096, maxFile, maxFile + 1000} {
		want := bytes.Repeat([]byte("x"), n)
		name := filepath.Join(dir, "f")
		if err := os.WriteFile(name, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readBounded(name)
		if err != nil || !bytes.Equal(got, want[:min(n, maxFile)]) {
			t.Errorf("%d bytes: read %d, %v; want %d", n, len(got), err, min(n, maxFile))
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte, 1)
	go func() {
		b, _ := readBounded(fifo)
		done <- b
	}()
	select {
	case b := <-done:
		if len(b) != 0 {
			t.Errorf("a FIFO gave %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	if _, err := readBounded(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want not-exist", err)
	}
}
