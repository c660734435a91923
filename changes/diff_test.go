package changes

import (
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// randomBytes is n bytes that do not compress, NULs among them.
func randomBytes(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[0] = 0
	return string(b)
}

func lines(n int, prefix string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(prefix)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n")
	}
	return b.String()
}

// TestDiffCases runs each kind of change through real git apply.
func TestDiffCases(t *testing.T) {
	long := lines(200, "line ")
	edited := strings.Replace(strings.Replace(long, "line xx\n", "LINE\n", 3), "line xxxxx\n", "", 2)
	big := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	cases := []struct {
		name     string
		orig     map[string]node
		mod      map[string]node
		lim      Limits
		kinds    map[string]Kind // path: kind, for every changed path
		omitted  []string        // paths the patch leaves out
		contains []string        // in the patch
	}{
		{
			name:  "text edit",
			orig:  map[string]node{"a.txt": file(long), "b.txt": file("same\n")},
			mod:   map[string]node{"a.txt": file(edited), "b.txt": file("same\n")},
			kinds: map[string]Kind{"a.txt": Modified},
		},
		{
			name:  "add",
			orig:  map[string]node{"keep": file("k\n")},
			mod:   map[string]node{"keep": file("k\n"), "new.txt": file("one\ntwo\n"), "dir/sub/deep.txt": file("d\n"), "empty": file("")},
			kinds: map[string]Kind{"new.txt": Added, "dir/sub/deep.txt": Added, "empty": Added},
			contains: []string{"new file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n",
				"@@ -0,0 +1,2 @@\n+one\n+two\n"},
		},
		{
			name:     "delete",
			orig:     map[string]node{"gone.txt": file("a\nb\n"), "empty": file(""), "d/x": file("x\n"), "keep": file("k")},
			mod:      map[string]node{"keep": file("k")},
			kinds:    map[string]Kind{"gone.txt": Deleted, "empty": Deleted, "d/x": Deleted},
			contains: []string{"deleted file mode 100644\nindex 422c2b7ab3b3c668038da977e4e93a5fc623169c..0000000000000000000000000000000000000000\n--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n"},
		},
		{
			name:     "mode",
			orig:     map[string]node{"run.sh": file("echo\n"), "both.sh": file("a\n"), "off": execFile("x\n")},
			mod:      map[string]node{"run.sh": execFile("echo\n"), "both.sh": execFile("b\n"), "off": file("x\n")},
			kinds:    map[string]Kind{"run.sh": ModeChanged, "both.sh": Modified, "off": ModeChanged},
			contains: []string{"diff --git a/off b/off\nold mode 100755\nnew mode 100644\ndiff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n", "old mode 100644\nnew mode 100755\nindex "},
		},
		{
			name: "symlinks",
			orig: map[string]node{"l1": link("a"), "l2": link("x"), "l3": link("y"), "f": file("f\n"), "a": file("a\n")},
			mod: map[string]node{"l1": link("b"), "l2": file("now a file\n"), "l3": link("y"), "f": link("a"),
				"a": file("a\n"), "shadow": link("/etc/shadow"), "up": link(".."), "dangling": link("no/such/thing")},
			kinds: map[string]Kind{"l1": Modified, "l2": TypeChanged, "f": TypeChanged, "shadow": Added, "up": Added, "dangling": Added},
			contains: []string{"new file mode 120000\nindex 0000000000000000000000000000000000000000..", "+/etc/shadow\n\\ No newline at end of file\n",
				"index 2e65efe2a145dda7ee51d1741299f848e5bf752e..63d8dbd40c23542e740659a7168a0ce3138ea748 120000\n"},
		},
		{
			name:     "symlink deleted",
			orig:     map[string]node{"l": link("t"), "t": file("t\n")},
			mod:      map[string]node{"t": file("t\n")},
			kinds:    map[string]Kind{"l": Deleted},
			contains: []string{"deleted file mode 120000\n"},
		},
		{
			name:     "binary",
			orig:     map[string]node{"mod.bin": file(randomBytes(1, 300)), "del.bin": file(randomBytes(2, 1000)), "small": file("x\x00y")},
			mod:      map[string]node{"mod.bin": file(randomBytes(3, 301)), "add.bin": file(randomBytes(4, 5000)), "small": file("x\x00z\x01")},
			kinds:    map[string]Kind{"mod.bin": Modified, "del.bin": Deleted, "add.bin": Added, "small": Modified},
			contains: []string{"GIT binary patch\nliteral 301\n", "deleted file mode 100644\nindex 97d31d5498cb867ca4464d6364670c3513fdc916..0000000000000000000000000000000000000000\nGIT binary patch\nliteral 0\n", "\nliteral 1000\n"},
		},
		{
			name:     "text becomes binary",
			orig:     map[string]node{"f": file("text\n")},
			mod:      map[string]node{"f": file("bin\x00ary")},
			kinds:    map[string]Kind{"f": Modified},
			contains: []string{"GIT binary patch\n"},
		},
		{
			name:     "rename",
			orig:     map[string]node{"old.txt": file(long), "x.sh": file("#!/bin/sh\n"), "e1": file("")},
			mod:      map[string]node{"new/place.txt": file(long), "y.sh": execFile("#!/bin/sh\n"), "e2": file("")},
			kinds:    map[string]Kind{"new/place.txt": Renamed, "y.sh": Renamed, "e1": Deleted, "e2": Added},
			contains: []string{"diff --git a/old.txt b/new/place.txt\nsimilarity index 100%\nrename from old.txt\nrename to new/place.txt\n", "diff --git a/x.sh b/y.sh\nold mode 100644\nnew mode 100755\nsimilarity index 100%\n"},
		},
		{
			name:  "no trailing newline",
			orig:  map[string]node{"a": file("one\ntwo"), "b": file("one\ntwo\n"), "c": file("x"), "d": file("p\nq")},
			mod:   map[string]node{"a": file("one\ntwo\n"), "b": file("one\ntwo"), "c": file("x\ny"), "d": file("p\nr")},
			kinds: map[string]Kind{"a": Modified, "b": Modified, "c": Modified, "d": Modified},
			contains: []string{"-two\n\\ No newline at end of file\n+two\n", "-two\n+two\n\\ No newline at end of file\n",
				"@@ -1 +1,2 @@\n-x\n\\ No newline at end of file\n+x\n+y\n\\ No newline at end of file\n"},
		},
		{
			name:     "crlf",
			orig:     map[string]node{"w.txt": file("a\r\nb\r\nc\r\n"), "mixed": file("a\r\nb\nc\r")},
			mod:      map[string]node{"w.txt": file("a\r\nB\r\nc\r\n"), "mixed": file("a\nb\r\nc\r\n")},
			kinds:    map[string]Kind{"w.txt": Modified, "mixed": Modified},
			contains: []string{"-b\r\n+B\r\n"},
		},
		{
			name:  "over the per-file limit",
			orig:  map[string]node{"big.mod": file(big), "big.del": file(big + "d"), "small": file("s\n")},
			mod:   map[string]node{"big.mod": file(big + "more"), "big.add": file(big + "a"), "small": file("S\n")},
			lim:   Limits{FileBytes: 1000},
			kinds: map[string]Kind{"big.mod": Modified, "big.add": Added, "big.del": Deleted, "small": Modified},
			// The deletion is still carried: a binary patch to empty.
			omitted:  []string{"big.mod", "big.add"},
			contains: []string{"deleted file mode 100644\nindex 0e7e763c8f6411fc2a0aa6bfd6fa4d2c19e7bd0c..0000000000000000000000000000000000000000\nGIT binary patch\nliteral 0\n"},
		},
		{
			name: "file becomes a directory and back",
			orig: map[string]node{"x": file("file\n"), "d/a": file("a\n"), "d/b/c": link("../a")},
			mod:  map[string]node{"x/inside": file("now a dir\n"), "d": file("now a file\n")},
			kinds: map[string]Kind{"x": Deleted, "x/inside": Added, "d": Added, "d/a": Deleted,
				"d/b/c": Deleted},
		},
		{
			name: "quoting",
			orig: map[string]node{"sp ace": file("1\n"), "q\"uote": file("2\n"), "back\\slash": file("3\n"),
				"tab\there": file("4\n"), "new\nline": file("5\n"), "caf\u00e9": file("6\n"), "ctl\x01\x7f": file("7\n"),
				"dir with space/f": file("8\n"), "trailing ": file("9\n")},
			mod: map[string]node{"sp ace": file("1!\n"), "q\"uote": file("2!\n"), "back\\slash": file("3!\n"),
				"tab\there": file("4!\n"), "new\nline": file("5!\n"), "caf\u00e9": file("6!\n"), "ctl\x01\x7f": file("7!\n"),
				"dir with space/g": file("8\n"), "trailing ": file("9!\n"), "ren amed": file("2\n"), "\u00fcber \"x\"": file("u\n")},
			kinds: map[string]Kind{"sp ace": Modified, "q\"uote": Modified, "back\\slash": Modified, "tab\there": Modified,
				"new\nline": Modified, "caf\u00e9": Modified, "ctl\x01\x7f": Modified, "dir with space/g": Renamed,
				"trailing ": Modified, "ren amed": Added, "\u00fcber \"x\"": Added},
			contains: []string{"diff --git \"a/q\\\"uote\" \"b/q\\\"uote\"\n", "--- a/sp ace\t\n+++ b/sp ace\t\n",
				"diff --git \"a/caf\\303\\251\" \"b/caf\\303\\251\"\n", "\"a/ctl\\001\\177\"", "\"b/new\\nline\"",
				"rename from dir with space/f\nrename to dir with space/g\n", "+++ \"b/\\303\\274ber \\\"x\\\"\"\t\n"},
		},
		{
			// git apply cannot split an unquoted "diff --git a/d /e b/d /e"
			// line, and these parts have no "---" line to name the file.
			name:     "space before a slash",
			orig:     map[string]node{"d /gone": file(""), "d /m": file("m\n"), "d /t": file("t\n")},
			mod:      map[string]node{"d /new": file(""), "d /m": execFile("m\n"), "d /t": file("T\n")},
			kinds:    map[string]Kind{"d /gone": Deleted, "d /new": Added, "d /m": ModeChanged, "d /t": Modified},
			contains: []string{"diff --git \"a/d /gone\" \"b/d /gone\"\n", "diff --git \"a/d /m\" \"b/d /m\"\nold mode"},
		},
		{
			// git apply --check looks at loop/x on disk before it removes
			// the link loop, and stops at ELOOP: x is left out.
			name: "looping link replaced by a directory",
			orig: map[string]node{"loop": link("loop"), "l2": link("l3"), "l3": link("l2"), "ok": link("d"), "d/f": file("f\n"),
				"a/a": link("a"), "s": link("a")},
			mod: map[string]node{"loop/x": file("x\n"), "l2/y": file("y\n"), "l3": link("l2"), "ok/z": file("z\n"), "d/f": file("f\n"),
				"a/a": link("a"), "s/a/x": file("x\n")},
			kinds: map[string]Kind{"loop": Deleted, "loop/x": Added, "l2": Deleted, "l2/y": Added, "ok": Deleted, "ok/z": Added,
				"s": Deleted, "s/a/x": Added},
			// s leads to a, whose a/a loops.
			omitted: []string{"loop/x", "l2/y", "s/a/x"},
		},
		{
			name: "paths git refuses",
			orig: map[string]node{".git/config": file("[core]\n"), "src/a": file("a\n")},
			mod: map[string]node{".git/config": file("[core]\n\tfsmonitor = evil\n"), ".git/hooks/post-checkout": execFile("evil\n"),
				"sub/.GIT/x": file("x\n"), "sub/git~1/y": file("y\n"), ".gitmodules": link("/etc/passwd"), "src/a": file("A\n"),
				// NTFS's alternate data streams, HFS+'s ignored code points.
				".git:x": file("x\n"), "sub/git~1:y": file("y\n"), `w\.git::$INDEX_ALLOCATION`: file("z\n"),
				".g\u200cit/hooks/x": file("x\n"), "d/gi7eba~1": link("/etc/passwd"), "d/.gitmodules :x": link("t")},
			kinds: map[string]Kind{".git/config": Modified, ".git/hooks/post-checkout": Added, "sub/.GIT/x": Added,
				"sub/git~1/y": Added, ".gitmodules": Added, "src/a": Modified, ".git:x": Added, "sub/git~1:y": Added,
				`w\.git::$INDEX_ALLOCATION`: Added, ".g\u200cit/hooks/x": Added, "d/gi7eba~1": Added, "d/.gitmodules :x": Added},
			omitted: []string{".git/config", ".git/hooks/post-checkout", "sub/.GIT/x", "sub/git~1/y", ".gitmodules", ".git:x",
				"sub/git~1:y", `w\.git::$INDEX_ALLOCATION`, ".g\u200cit/hooks/x", "d/gi7eba~1", "d/.gitmodules :x"},
		},
		{
			name:  "whole file past the line limit",
			orig:  map[string]node{"w": file("1\n2\n3\n4\n"), "nonl": file("a\nb\nc"), "small": file("x\ny\n")},
			mod:   map[string]node{"w": file("1\n2\nthree\n4\n5\n"), "nonl": file("a\nb\nC"), "small": file("x\nY\n")},
			lim:   Limits{DiffLines: 2},
			kinds: map[string]Kind{"w": Modified, "nonl": Modified, "small": Modified},
			contains: []string{"@@ -1,4 +1,5 @@\n-1\n-2\n-3\n-4\n+1\n+2\n+three\n+4\n+5\n",
				"@@ -1,3 +1,3 @@\n-a\n-b\n-c\n\\ No newline at end of file\n+a\n+b\n+C\n\\ No newline at end of file\n",
				"@@ -1,2 +1,2 @@\n x\n-y\n+Y\n"},
		},
		{
			name:  "fifo",
			orig:  map[string]node{"was": file("w\n"), "k": file("k\n"), "p": {fifo: true}, "d/f": file("f\n")},
			mod:   map[string]node{"was": {fifo: true}, "new": {fifo: true}, "k": file("K\n"), "p/x": file("x\n"), "d": {fifo: true}},
			kinds: map[string]Kind{"was": Skipped, "new": Skipped, "k": Modified, "p": Skipped, "p/x": Added, "d": Skipped, "d/f": Deleted},
			// A fifo is never opened (this would block): the original's
			// file stays, and nothing is made beneath the original's fifo.
			omitted: []string{"was", "new", "p", "p/x", "d"},
		},
		{
			name:  "patch size limit",
			orig:  map[string]node{"a": file(lines(50, "a")), "b": file("b\n"), "c": file(lines(50, "c")), "z/f": file("f\n")},
			mod:   map[string]node{"a": file(lines(50, "A")), "b": file("B\n"), "c": file(lines(50, "C")), "z": file("z is a file\n")},
			lim:   Limits{PatchBytes: 900},
			kinds: map[string]Kind{"a": Modified, "b": Modified, "c": Modified, "z": Added, "z/f": Deleted},
			// The changes to the original's text files rank first, the
			// smaller first: z/f and b fit, a and c do not; z, added,
			// comes after them and fits.
			omitted: []string{"a", "c"},
		},
		{
			name: "file count limit",
			orig: map[string]node{"d/x": file("x\n"), "d/y": file("y\n")},
			mod:  map[string]node{"a": file("a\n"), "b": file("b\n"), "d": file("d\n")},
			lim:  Limits{Files: 2},
			// The deletions of the original's files rank before the files
			// added, which are past the limit.
			kinds:   map[string]Kind{"a": Added, "b": Added, "d": Added, "d/x": Deleted, "d/y": Deleted},
			omitted: []string{"a", "b", "d"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig, mod := writeTree(t, tc.orig), writeTree(t, tc.mod)
			p := diffDirs(t, orig, mod, tc.lim)
			got := map[string]Kind{}
			var omitted []string
			for _, f := range p.Files {
				got[f.Path] = f.Kind
				if f.Omitted != "" {
					omitted = append(omitted, f.Path)
				}
			}
			if !maps.Equal(got, tc.kinds) {
				t.Errorf("kinds %v, want %v", got, tc.kinds)
			}
			if want := slices.Sorted(slices.Values(tc.omitted)); !slices.Equal(omitted, want) {
				t.Errorf("omitted %q, want %q (manifest %+v)", omitted, want, p.Files)
			}
			if p.Complete != (len(tc.omitted) == 0) {
				t.Errorf("Complete %v with %d omitted", p.Complete, len(omitted))
			}
			if (p.Incomplete() == nil) != p.Complete || !p.Complete && !errors.Is(p.Incomplete(), ErrIncomplete) {
				t.Errorf("Incomplete() = %v with Complete %v", p.Incomplete(), p.Complete)
			}
			for _, s := range tc.contains {
				if !strings.Contains(string(p.Diff), s) {
					t.Errorf("the patch lacks %q:\n%s", s, p.Diff)
				}
			}
			lim, _ := tc.lim.normalize()
			if int64(len(p.Diff)) > lim.PatchBytes {
				t.Errorf("patch of %d bytes, over its limit of %d", len(p.Diff), lim.PatchBytes)
			}
			checkApplies(t, orig, mod, p)
		})
	}
}

// TestManifest checks a manifest entry field by field.
func TestManifest(t *testing.T) {
	orig := writeTree(t, map[string]node{"f": file("a\n"), "l": link("x")})
	mod := writeTree(t, map[string]node{"f": execFile("ab\n"), "l": link("yy"), "big": file(strings.Repeat("b", 2000))})
	p := diffDirs(t, orig, mod, Limits{FileBytes: 1000})
	want := []FileChange{
		{Path: "big", Kind: Added, NewMode: ModeFile, NewSize: 2000,
			NewSHA256: sha256Hex(strings.Repeat("b", 2000)), Omitted: "over the per-file limit of 1000 bytes (Limits.FileBytes)", Class: OmitLarge},
		{Path: "f", Kind: Modified, OldMode: ModeFile, NewMode: ModeExec, OldSize: 2, NewSize: 3,
			OldSHA256: sha256Hex("a\n"), NewSHA256: sha256Hex("ab\n")},
		{Path: "l", Kind: Modified, OldMode: ModeSymlink, NewMode: ModeSymlink, OldSize: 1, NewSize: 2,
			OldSHA256: sha256Hex("x"), NewSHA256: sha256Hex("yy")},
	}
	if len(p.Files) != len(want) {
		t.Fatalf("manifest %+v, want %+v", p.Files, want)
	}
	for i := range want {
		if p.Files[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, p.Files[i], want[i])
		}
	}
	checkApplies(t, orig, mod, p)
}

func sha256Hex(s string) string {
	sum, _ := hashes([]byte(s))
	return sum
}

// TestEntriesLimit: a tree with more entries than the limit cannot be
// compared, and says so.
func TestEntriesLimit(t *testing.T) {
	orig := writeTree(t, map[string]node{"a": file("a")})
	mod := writeTree(t, map[string]node{"a": file("a"), "b": file("b"), "c/d": file("d")})
	_, err := Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), Options{Limits: Limits{Entries: 3}})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "current") {
		t.Fatalf("Diff with 4 entries and a limit of 3: %v, want ErrTooLarge naming the current tree", err)
	}
	if _, err := Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), Options{Limits: Limits{Entries: 4}}); err != nil {
		t.Fatalf("Diff at the limit: %v", err)
	}
	_, err = Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), Options{Limits: Limits{NameBytes: 5}})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "NameBytes") {
		t.Fatalf("Diff with 6 bytes of names and a limit of 5: %v, want ErrTooLarge naming NameBytes", err)
	}
	if _, err := Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), Options{Limits: Limits{Files: -1}}); err == nil {
		t.Fatal("a negative limit was accepted")
	}
}

// TestReadBudget: past the read budget files are not compared; the
// manifest says so and the patch leaves them.
func TestReadBudget(t *testing.T) {
	orig := writeTree(t, map[string]node{"a": file("aaaa"), "b": file("bbbb"), "c": file("cccc")})
	mod := writeTree(t, map[string]node{"a": file("aaaa"), "b": file("BBBB"), "c": file("cccc")})
	p := diffDirs(t, orig, mod, Limits{ReadBytes: 12})
	// a (8 bytes read, the same), b (4 more: its original only).
	if len(p.Files) != 2 || p.Files[0].Path != "b" || !strings.Contains(p.Files[0].Omitted, "it may be unchanged") ||
		p.Files[1].Path != "c" || !strings.Contains(p.Files[1].Omitted, "Limits.ReadBytes") {
		t.Fatalf("manifest %+v", p.Files)
	}
	checkApplies(t, orig, mod, p)
}

// TestBadTree: a Tree that lists bad paths is refused.
func TestBadTree(t *testing.T) {
	for _, list := range [][]Entry{
		{{Path: "../x", Type: File}},
		{{Path: "/abs", Type: File}},
		{{Path: "a//b", Type: File}},
		{{Path: "a/./b", Type: File}},
		{{Path: "x\x00", Type: File}},
		{{Path: "a", Type: File}, {Path: "a", Type: File}},
		{{Path: "d/f", Type: File}},
		{{Path: "f", Type: File}, {Path: "f/g", Type: File}},
		{{Path: "f", Type: File, Size: -1}},
		{{Path: "f", Type: 9}},
	} {
		if _, err := Diff(listTree(nil), listTree(list), Options{Limits: Limits{}}); err == nil {
			t.Errorf("Diff accepted a tree listing %+v", list)
		}
	}
}

// listTree is a Tree that lists what it is given and opens nothing.
type listTree []Entry

func (l listTree) List(Limits, func(string) bool) ([]Entry, error) { return l, nil }
func (l listTree) Open(string) (io.ReadCloser, error) {
	return nil, os.ErrNotExist
}

// TestDeepTree: a directory nested too deep is skipped, and the patch
// still applies.
func TestDeepTree(t *testing.T) {
	deep := strings.Repeat("d/", maxDepth+1) + "f"
	orig := writeTree(t, map[string]node{"a": file("a\n")})
	mod := writeTree(t, map[string]node{"a": file("b\n"), deep: file("deep\n")})
	p := diffDirs(t, orig, mod, Limits{})
	last := p.Files[len(p.Files)-1]
	if last.Kind != Skipped || !strings.Contains(last.Omitted, "nested deeper") {
		t.Fatalf("manifest %+v", p.Files)
	}
	checkApplies(t, orig, mod, p)
	if filepath.Base(last.Path) != "d" {
		t.Fatalf("skipped %q", last.Path)
	}
}

// TestLongPath: a path longer than a system call takes is skipped (git
// apply could not write it), with what is beneath it.
func TestLongPath(t *testing.T) {
	long := strings.Repeat("d", 200) + strings.Repeat("/"+strings.Repeat("d", 200), 20)
	var list listTree
	for p := long; p != "."; p = path.Dir(p) {
		list = append(list, Entry{Path: p, Type: Dir})
	}
	list = append(list, Entry{Path: long + "/f", Type: File})
	p, err := Diff(listTree(nil), list, Options{Limits: Limits{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 1 || p.Files[0].Kind != Skipped || !strings.Contains(p.Files[0].Omitted, "longer than 4095") || len(p.Diff) != 0 {
		t.Fatalf("manifest %+v", p.Files)
	}
}
