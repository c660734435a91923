package sandbox

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzEntryName checks the tar name rule: an accepted name is a clean,
// relative path that stays beneath the directory it is joined to.
func FuzzEntryName(f *testing.F) {
	for _, s := range []string{"a", "a/b/", "../x", "/abs", "a/../../b", ".", "..", "a//b", "./a", "a/./b", "a\x00b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, err := entryName(raw)
		if err != nil {
			return
		}
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || strings.Contains(name, "\x00") {
			t.Fatalf("accepted %q as %q", raw, name)
		}
		if j := path.Join("/base", name); !strings.HasPrefix(j, "/base/") {
			t.Fatalf("accepted %q, which joins to %q", raw, j)
		}
	})
}

// fuzzTar is a tar stream of (type, name, link or body) triples.
func fuzzTar(entries ...[3]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e[1], Mode: 0o644}
		switch e[0] {
		case "d":
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case "l":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e[2]
		case "h":
			h.Typeflag, h.Linkname = tar.TypeLink, e[2]
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e[2]))
		}
		tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e[2]))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// FuzzExtractEntries is FuzzExtractWorkspace with well-formed tar streams
// built from a script, one entry a line ("f name body", "d name", "l name
// target", "h name target"), so that the fuzzer spends its time on names,
// links and types rather than on tar checksums.
func FuzzExtractEntries(f *testing.F) {
	for _, s := range []string{
		"d a\nf a/b hello",
		"l up ..\nf up/escaped x",
		"l abs /tmp\nf abs/escaped x",
		"d d\nl d/l ../../outside\nf d/l over",
		"f ../outside x",
		"h hard ../outside",
		"l a .\nf a/a/a x",
		"d x/\nd x/../..\nf x/../../outside y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		var ents [][3]string
		for _, line := range strings.Split(script, "\n") {
			fields := strings.SplitN(line, " ", 3)
			if len(fields) < 2 {
				continue
			}
			e := [3]string{fields[0], fields[1], ""}
			if len(fields) == 3 {
				e[2] = fields[2]
			}
			if e[0] == "d" {
				e[1] += "/"
			}
			ents = append(ents, e)
		}
		checkExtraction(t, fuzzTar(ents...))
	})
}

// FuzzExtractWorkspace feeds arbitrary tar streams to the workspace copy-in
// and checks that nothing is ever created outside the target directory,
// whatever the names, links and sizes.
func FuzzExtractWorkspace(f *testing.F) {
	f.Add(fuzzTar([3]string{"d", "a/", ""}, [3]string{"f", "a/b.txt", "hello"}))
	f.Add(fuzzTar([3]string{"l", "up", ".."}, [3]string{"f", "up/escaped", "x"}))
	f.Add(fuzzTar([3]string{"l", "abs", "/tmp"}, [3]string{"f", "abs/escaped", "x"}))
	f.Add(fuzzTar([3]string{"f", "../escaped", "x"}))
	f.Add(fuzzTar([3]string{"f", "/escaped", "x"}))
	f.Add(fuzzTar([3]string{"h", "hard", "../outside"}))
	f.Add(fuzzTar([3]string{"d", "d/", ""}, [3]string{"l", "d/l", "../../outside"}, [3]string{"f", "d/l", "over"}))
	f.Add([]byte("not a tar stream"))
	f.Fuzz(checkExtraction)
}

// checkExtraction extracts data into a fresh directory and fails if
// anything was created or changed outside it, or past the size cap.
func checkExtraction(t *testing.T, data []byte) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "outside")
	if err := os.WriteFile(outside, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = extractWorkspace(bytes.NewReader(data), ws, 1<<16)
	ents, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "ws" && e.Name() != "outside" {
			t.Fatalf("extraction created %s outside the workspace", e.Name())
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "untouched" {
		t.Fatalf("a file outside the workspace changed: %q", b)
	}
	var total int64
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if st, err := os.Lstat(p); err == nil {
				total += st.Size()
			}
		}
		return nil
	})
	if total > 1<<16 {
		t.Fatalf("extracted %d bytes past the %d cap", total, 1<<16)
	}
}

// FuzzCopyFindings builds a /findings tree from the fuzzer's bytes — files
// of any size, directories, symbolic links to a host file, fifos — plants
// a link in the host's findings directory, and checks the copy-out: only
// directories and regular files arrive, within the size cap, with the
// source's content, and nothing is written through a link.
func FuzzCopyFindings(f *testing.F) {
	f.Add([]byte{0, 'a', 10, 1, 'd', 0, 2, 'l', 0, 3, 'p', 0, 0, 'v', 200})
	f.Add([]byte{1, 'x', 0, 0, 'y', 255, 0, 'z', 255, 0, 'w', 255})
	f.Add([]byte{1, 'v', 0, 0, 'v', 5})
	f.Fuzz(func(t *testing.T, prog []byte) {
		base := t.TempDir()
		src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
		victim := filepath.Join(base, "victim")
		os.Mkdir(src, 0o755)
		os.Mkdir(dst, 0o755)
		os.WriteFile(victim, []byte("untouched"), 0o644)
		// A host-side trap: the sandbox writes "v", the host has a link.
		os.Symlink(victim, filepath.Join(dst, "v"))
		dir := src
		for i := 0; i+2 < len(prog) && i < 3*64; i += 3 {
			op, name, arg := prog[i]%4, string(rune('a'+prog[i+1]%26)), int(prog[i+2])
			p := filepath.Join(dir, name)
			switch op {
			case 0:
				// O_EXCL: never through a link this loop made.
				if w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
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
		if _, err := copyFindings(fd, dst, limit); err != nil {
			t.Fatalf("copyFindings: %v", err)
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
