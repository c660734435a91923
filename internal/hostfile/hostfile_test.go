//go:build unix

package hostfile

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpen: a regular file opens (in blocking mode); anything else is
// refused at once, named as what it is, and a FIFO never blocks.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link")
	if err := os.Symlink("fifo", link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		file:        "",
		fifo:        fifo + " is a named pipe (FIFO), not a regular file",
		link:        link + " is a named pipe (FIFO), not a regular file",
		sock:        sock + " is a socket, not a regular file",
		dir:         dir + " is a directory, not a regular file",
		"/dev/null": "/dev/null is a character device, not a regular file",
	} {
		done := make(chan error, 1)
		go func() {
			f, fi, err := Open(path)
			if err == nil {
				if fi.Size() != 1 {
					t.Errorf("%s: size %d", path, fi.Size())
				}
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			switch {
			case want == "" && err != nil:
				t.Errorf("Open(%s): %v", path, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("Open(%s): %v, want %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Open(%s) blocked", path)
		}
	}
}

// TestWriteFile: a regular file is written (and truncated); a FIFO with
// no reader, a directory or a device is refused at once and left alone.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("longer old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A link left where airlock is told to write: never written through.
	victim, link := filepath.Join(dir, "victim"), filepath.Join(dir, "link")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Errorf("written through the link: the file it names holds %q", b)
		}
	}()
	for path, want := range map[string]string{
		link:                      link + " is a symbolic link: airlock does not write through one",
		file:                      "",
		filepath.Join(dir, "new"): "",
		fifo:                      fifo + " is a named pipe (FIFO), not a regular file",
		dir:                       "is a directory",
		"/dev/null":               "/dev/null is a character device, not a regular file",
	} {
		done := make(chan error, 1)
		go func() { done <- WriteFile(path, []byte("new"), 0o644) }()
		select {
		case err := <-done:
			switch {
			case want == "" && err != nil:
				t.Errorf("WriteFile(%s): %v", path, err)
			case want == "":
				if b, _ := os.ReadFile(path); string(b) != "new" {
					t.Errorf("%s holds %q", path, b)
				}
			case err == nil || !strings.Contains(err.Error(), want):
				t.Errorf("WriteFile(%s): %v, want %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("WriteFile(%s) blocked", path)
		}
	}
}

func TestReal(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for in, want := range map[string]string{
		"link":              dir + "/real",
		"link/not/yet":      dir + "/real/not/yet",
		"./real/../link/x":  dir + "/real/x",
		dir + "/missing/..": dir,
	} {
		if got, err := Real(in); err != nil || got != want {
			t.Errorf("Real(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, c := range []struct {
		p, dir string
		want   bool
	}{{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/a", "/", true}, {"/a", "/a/b", false}} {
		if got := Within(c.p, c.dir); got != c.want {
			t.Errorf("Within(%q, %q) = %v", c.p, c.dir, got)
		}
	}
}

// TestOpenNoFollow refuses a symbolic link as the last element, and opens
// the file itself.
func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	file, link := filepath.Join(dir, "f"), filepath.Join(dir, "l")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if f, _, err := OpenNoFollow(link); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenNoFollow(link) = %v, want a refusal of the link", err)
	}
	f, fi, err := OpenNoFollow(file)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("OpenNoFollow(file) = %v, %v", fi, err)
	}
	f.Close()
}
