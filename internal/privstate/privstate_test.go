package privstate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirsAndFiles(t *testing.T) {
	base := t.TempDir()
	dir, err := Dirs(base, "airlock", "keys")
	if err != nil || dir != filepath.Join(base, "airlock", "keys") {
		t.Fatalf("Dirs: %q %v", dir, err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if err := WriteOnce(dir, "k", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteOnce(dir, "k", []byte("two")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second WriteOnce: %v", err)
	}
	if b, err := ReadPrivate(filepath.Join(dir, "k"), 16); err != nil || string(b) != "one" {
		t.Fatalf("ReadPrivate: %q %v", b, err)
	}
	os.Chmod(filepath.Join(dir, "k"), 0o644)
	if _, err := ReadPrivate(filepath.Join(dir, "k"), 16); err == nil || !strings.Contains(err.Error(), "open to group or others") {
		t.Fatalf("a readable file: %v", err)
	}
	os.Symlink(dir, filepath.Join(base, "link"))
	if err := CheckDir(filepath.Join(base, "link")); err == nil {
		t.Fatal("a link to a private directory was accepted")
	}
	// One that group or others may read is the caller's own, made by an
	// older airlock: closed, not refused. One they may write is refused.
	os.Chmod(dir, 0o750)
	if _, err := Dirs(base, "airlock", "keys"); err != nil {
		t.Fatalf("a readable directory of the caller's: %v", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("a readable directory became %v, want 0700", fi.Mode().Perm())
	}
	os.Chmod(dir, 0o770)
	if _, err := Dirs(base, "airlock", "keys"); err == nil || !strings.Contains(err.Error(), "open to group or others") {
		t.Fatalf("a directory group may write: %v", err)
	}
}
