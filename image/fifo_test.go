//go:build unix

package image

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVerifyRefusesFIFOs: a FIFO where an archive or a layout's index.json
// should be is refused at once; opening it would block until someone
// wrote to it.
func TestVerifyRefusesFIFOs(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "image.tar")
	layoutDir := filepath.Join(dir, "layout")
	if err := os.Mkdir(layoutDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{archive, filepath.Join(layoutDir, "index.json")} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(layoutDir, "oci-layout"), []byte(`{"imageLayoutVersion": "1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{archive: "is a named pipe (FIFO), not a regular file", layoutDir: "image: "} {
		ref, err := ParseRef(p + "@sha256:" + strings.Repeat("a", 64))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Verify(context.Background(), ref); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Verify(%s): %v", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Verify(%s) blocked on a FIFO", p)
		}
	}
}
