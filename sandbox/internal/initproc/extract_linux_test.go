package initproc

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzEntryName checks the entry name rule: an accepted name is a clean,
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

// fuzzStream is a workspace stream of (type, name, link or body) triples;
// "h" makes an entry of a type the init does not know.
func fuzzStream(entries ...[3]string) []byte {
	var buf bytes.Buffer
	for _, e := range entries {
		ent := Entry{Name: e[1], Mode: 0o644}
		switch e[0] {
		case "d":
			ent.Type, ent.Mode = EntryDir, 0o755
		case "l":
			ent.Type, ent.Link = EntrySymlink, e[2]
		case "h":
			ent.Type, ent.Link = "hardlink", e[2]
		default:
			ent.Type, ent.Size = EntryFile, int64(len(e[2]))
		}
		WriteEntry(&buf, ent, strings.NewReader(e[2]))
	}
	return buf.Bytes()
}

// FuzzExtractEntries is FuzzExtractWorkspace with well-formed streams
// built from a script, one entry a line ("f name body", "d name", "l name
// target", "h name target"), so that the fuzzer spends its time on names,
// links and types rather than on framing.
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
		checkExtraction(t, fuzzStream(ents...))
	})
}

// FuzzExtractWorkspace feeds arbitrary workspace streams to the workspace copy-in
// and checks that nothing is ever created outside the target directory,
// whatever the names, links and sizes.
func FuzzExtractWorkspace(f *testing.F) {
	f.Add(fuzzStream([3]string{"d", "a/", ""}, [3]string{"f", "a/b.txt", "hello"}))
	f.Add(fuzzStream([3]string{"l", "up", ".."}, [3]string{"f", "up/escaped", "x"}))
	f.Add(fuzzStream([3]string{"l", "abs", "/tmp"}, [3]string{"f", "abs/escaped", "x"}))
	f.Add(fuzzStream([3]string{"f", "../escaped", "x"}))
	f.Add(fuzzStream([3]string{"f", "/escaped", "x"}))
	f.Add(fuzzStream([3]string{"h", "hard", "../outside"}))
	f.Add(fuzzStream([3]string{"d", "d/", ""}, [3]string{"l", "d/l", "../../outside"}, [3]string{"f", "d/l", "over"}))
	f.Add([]byte("not a workspace stream"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
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
