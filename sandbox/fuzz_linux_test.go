package sandbox

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

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
		d, err := openFindingsDest(dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.close()
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
		report, err := d.copyOut(fd, limit)
		if err != nil && !errors.Is(err, ErrFindingsLost) {
			t.Fatalf("copyOut: %v", err)
		}
		if lost := strings.Count(strings.Join(report, "\n"), ": not copied: "); (lost > 0) != (err != nil) {
			t.Fatalf("copyOut: %d entries reported lost, error %v", lost, err)
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
