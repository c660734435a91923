//go:build unix

package findings

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMark: the marker is written as a new file, never through
// what the sandbox left under its name (moved aside), and never through a
// symbolic link on the way to the directory.
func TestMark(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("untouched"), 0o644)
	os.Symlink(victim, filepath.Join(dir, "UNTRUSTED"))
	if err := Mark(dir, "UNTRUSTED", []byte("marked\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Errorf("the marker was written through the sandbox's link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "UNTRUSTED")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("marker: %v, %v", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "UNTRUSTED")); err != nil || string(b) != "marked\n" {
		t.Errorf("marker %q %v", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "UNTRUSTED-from-sandbox-*")); len(m) != 1 {
		t.Errorf("the sandbox's entry was not moved aside: %v", m)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("entries %v: want the marker and the link moved aside", ents)
	}
	os.Symlink(dir, filepath.Join(outside, "link"))
	if err := Mark(filepath.Join(outside, "link"), "UNTRUSTED", nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Mark through a link: %v", err)
	}
}

func TestOpenDestRefuses(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "full"), 0o755)
	os.WriteFile(filepath.Join(dir, "full", "x"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	os.Symlink(dir, filepath.Join(dir, "link"))
	os.Mkdir(filepath.Join(dir, "rw"), 0o755)
	for _, c := range []struct{ p, want string }{
		{filepath.Join(dir, "full"), "not empty"},
		{filepath.Join(dir, "file"), "not a directory"},
		{filepath.Join(dir, "link", "new"), "symbolic link"},
		{filepath.Join(dir, "rw", "new"), "readWrite"},
	} {
		if _, err := OpenDest(c.p, []string{filepath.Join(dir, "rw")}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenDest(%s) = %v, want %q", c.p, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "rw", "new")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused destination was made")
	}
	d, err := OpenDest(filepath.Join(dir, "empty"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Discard()
	if _, err := os.Stat(filepath.Join(dir, "empty")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a discarded destination airlock made is still there")
	}
}

// TestReadDirNamesBounded: a listing stops at its limit and says there
// is more; an empty directory is empty.
func TestReadDirNamesBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 1000 {
		os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o644)
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, c := range []struct {
		limit, want int
		more        bool
	}{{0, 0, true}, {1, 1, true}, {300, 300, true}, {999, 999, true}, {1000, 1000, false}, {5000, 1000, false}} {
		names, more, err := ReadDirNames(fd, c.limit)
		if err != nil || len(names) != c.want || more != c.more {
			t.Errorf("limit %d: %d names, more %v, %v; want %d, %v", c.limit, len(names), more, err, c.want, c.more)
		}
	}
	if _, more, err := ReadDirNames(fd, 0); !more || err != nil {
		t.Errorf("the emptiness check of 1000 entries: more %v, %v", more, err)
	}
}

// FuzzCopyFindings builds a /findings tree from the fuzzer's bytes — files
// of any size and mode, directories, symbolic links to a host file, fifos
// — plants a link in the host's findings directory once airlock has made
// it (as its owner could), and checks the copy-out: only directories and
// regular files arrive, within the size cap, with the source's content and
// no exec bit, nothing is written through a link, and every entry left out
// is reported.
func FuzzCopyFindings(f *testing.F) {
	f.Add([]byte{0, 'a', 10, 1, 'd', 0, 2, 'l', 0, 3, 'p', 0, 0, 'v', 200})
	f.Add([]byte{1, 'x', 0, 0, 'y', 255, 0, 'z', 255, 0, 'w', 255})
	f.Add([]byte{1, 'v', 0, 0, 'v', 5})
	f.Fuzz(func(t *testing.T, prog []byte) {
		base := t.TempDir()
		src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
		victim := filepath.Join(base, "victim")
		os.Mkdir(src, 0o755)
		os.WriteFile(victim, []byte("untouched"), 0o644)
		d, err := OpenDest(dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		// A host-side trap: the sandbox writes "v", the host has a link.
		os.Symlink(victim, filepath.Join(dst, "v"))
		dir := src
		for i := 0; i+2 < len(prog) && i < 3*64; i += 3 {
			op, name, arg := prog[i]%4, string(rune('a'+prog[i+1]%26)), int(prog[i+2])
			p := filepath.Join(dir, name)
			switch op {
			case 0:
				// O_EXCL: never through a link this loop made.
				if w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(0o600|arg%2*0o111)); err == nil {
					w.Write(bytes.Repeat([]byte{'x'}, arg*7))
					w.Close()
				}
			case 1:
				if os.Mkdir(p, 0o755) == nil && strings.Count(dir, "/") < strings.Count(src, "/")+8 {
					dir = p
				}
			case 2:
				os.Symlink(victim, p)
			case 3:
				unix.Mkfifo(p, 0o644)
			}
		}
		fd, err := unix.Open(src, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		const limit = 1000
		report, err := d.CopyOut(fd, limit)
		if err != nil && !errors.Is(err, ErrLost) {
			t.Fatalf("CopyOut: %v", err)
		}
		if lost := strings.Count(strings.Join(report, "\n"), ": not copied: "); (lost > 0) != (err != nil) {
			t.Fatalf("CopyOut: %d entries reported lost, error %v", lost, err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "untouched" {
			t.Fatalf("the copy wrote through a link: victim is %q", b)
		}
		var total int64
		filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dst {
				return nil
			}
			rel, _ := filepath.Rel(dst, p)
			switch {
			case rel == "v" && d.Type()&fs.ModeSymlink != 0:
				return nil // the host's own trap, left as it was
			case d.IsDir():
				return nil
			case !d.Type().IsRegular():
				t.Fatalf("copied %s of type %v", rel, d.Type())
			}
			if fi, _ := d.Info(); fi.Mode()&0o7111 != 0 {
				t.Fatalf("%s: copied with mode %v", rel, fi.Mode())
			}
			got, _ := os.ReadFile(p)
			want, _ := os.ReadFile(filepath.Join(src, rel))
			if !bytes.HasPrefix(want, got) {
				t.Fatalf("%s: copied %d bytes that are not the source's", rel, len(got))
			}
			total += int64(len(got))
			return nil
		})
		if total > limit {
			t.Fatalf("copied %d bytes past the %d cap", total, limit)
		}
	})
}

// TestOpenEach: the walk used where there is no openat2 (macOS) opens a
// path one component at a time, from "/" or the directory given, and
// follows no symbolic link on it, the last component included.
func TestOpenEach(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "link"))
	want, _ := os.Stat(filepath.Join(dir, "a", "b"))
	dirfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	for _, c := range []struct {
		at   int
		path string
	}{{unix.AT_FDCWD, filepath.Join(dir, "a", "b")}, {unix.AT_FDCWD, filepath.Join(dir, "a", "..", "a", "b") + "/"}, {dirfd, "a/b"}, {dirfd, "./a//b"}} {
		fd, err := openEach(c.at, c.path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Errorf("openEach(%s): %v", c.path, err)
			continue
		}
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		unix.Close(fd)
		if st.Ino != want.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("openEach(%s) opened another directory", c.path)
		}
	}
	for _, p := range []string{filepath.Join(dir, "link", "b"), filepath.Join(dir, "link")} {
		fd, err := openEach(unix.AT_FDCWD, p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err == nil {
			unix.Close(fd)
		}
		if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("openEach(%s) through a link: %v, want it refused", p, err)
		}
	}
}
