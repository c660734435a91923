package testutil

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallTmpfs mounts a tmpfs of size bytes on a fresh directory and
// returns the directory: a real file system that fills up, with ENOSPC as
// a full disk gives it. The test's cleanup unmounts it. Root only.
func SmallTmpfs(t testing.TB, size int) string {
	t.Helper()
	RequireRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("airlock-test", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount a %d-byte tmpfs: %v", size, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the test tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// FillDisk fills the file system holding dir: a file of zeros until a
// write fails with ENOSPC, then topUp, called until it fails, takes what
// is left (room in the last page of a log file, where a short line still
// fits: tmpfs and ext4 count whole pages). It returns a function that
// frees the space the zeros took.
func FillDisk(t testing.TB, dir string, topUp func() error) (free func()) {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-")
	if err != nil {
		t.Fatalf("fill the disk: %v", err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("fill the disk: %v", err)
			}
			break
		}
	}
	if topUp != nil {
		for n := 0; topUp() == nil; n++ {
			if n == 1000 {
				t.Fatal("fill the disk: the top-up never failed")
			}
		}
	}
	name := f.Name()
	return func() {
		if err := os.Remove(name); err != nil {
			t.Errorf("free the disk: %v", err)
		}
	}
}
