package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sandboxDirs makes base/rootfs's neighbours: a canary directory holding a
// secret, which no extraction may change.
func sandboxDirs(t testing.TB) (base, root, canary string) {
	t.Helper()
	base = t.TempDir()
	canary = filepath.Join(base, "canary")
	if err := os.MkdirAll(filepath.Join(canary, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(canary, "secret"), []byte("canary"), 0o644)
	os.WriteFile(filepath.Join(canary, "passwd"), []byte("root:x:0:0"), 0o644)
	return base, filepath.Join(base, "rootfs"), canary
}

// extractLayers runs the extractor over raw tar layers into root.
func extractLayers(t testing.TB, root string, opts Options, layers ...[]byte) (Stats, error) {
	t.Helper()
	var st Stats
	x, err := newExtractor(root, opts, &st)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	for i, l := range layers {
		if err := x.layer(context.Background(), i+1, tar.NewReader(bytes.NewReader(l))); err != nil {
			return st, err
		}
	}
	return st, x.finish()
}

// checkContained fails the test if anything beside the root changed.
func checkContained(t testing.TB, base, canaryBefore string) {
	t.Helper()
	if got := snapshot(t, filepath.Join(base, "canary")); got != canaryBefore {
		t.Fatalf("canary changed:\n%s\nwas:\n%s", got, canaryBefore)
	}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.Name() != "canary" && e.Name() != "rootfs" {
			t.Fatalf("extraction wrote %s beside the root", e.Name())
		}
	}
}

func TestExtractRefusesEscapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers func(canary string) [][]ent
		entry  string // the refused entry
		reason string
	}{
		{"dotdot", func(string) [][]ent { return [][]ent{{file("../../etc/x", "pwned")}} }, "../../etc/x", ReasonDotDot},
		{"dotdot to canary", func(string) [][]ent { return [][]ent{{file("../canary/secret", "pwned")}} }, "../canary/secret", ReasonDotDot},
		{"inner dotdot", func(string) [][]ent { return [][]ent{{file("a/../../canary/secret", "pwned")}} }, "a/../../canary/secret", ReasonDotDot},
		{"absolute", func(c string) [][]ent { return [][]ent{{file(c+"/secret", "pwned")}} }, "", ReasonAbsolute},
		{"abs", func(string) [][]ent { return [][]ent{{file("/abs", "pwned")}} }, "/abs", ReasonAbsolute},
		{"write through absolute symlink", func(c string) [][]ent {
			return [][]ent{{symlink("a", c), file("a/passwd", "pwned")}}
		}, "a/passwd", ReasonParentSymlink},
		// The brief's a -> /etc, a/passwd, with a file name that no host has,
		// so that even a broken extractor could not clobber a real file.
		{"write through a -> /etc", func(string) [][]ent {
			return [][]ent{{symlink("a", "/etc"), file("a/airlock-image-test-absent", "pwned")}}
		}, "a/airlock-image-test-absent", ReasonParentSymlink},
		{"write through relative symlink", func(string) [][]ent {
			return [][]ent{{symlink("a", "../canary"), file("a/passwd", "pwned")}}
		}, "a/passwd", ReasonParentSymlink},
		{"symlink planted by a lower layer", func(c string) [][]ent {
			return [][]ent{{symlink("etc", c)}, {file("etc/passwd", "pwned")}}
		}, "etc/passwd", ReasonParentSymlink},
		{"symlink chain", func(c string) [][]ent {
			return [][]ent{{symlink("b", c), symlink("a", "b"), file("a/secret", "pwned")}}
		}, "a/secret", ReasonParentSymlink},
		{"nested symlink", func(string) [][]ent {
			return [][]ent{{dir("d/"), symlink("d/e", "../../canary"), file("d/e/sub/x", "pwned")}}
		}, "d/e/sub/x", ReasonParentSymlink},
		{"symlink inside root is not followed either", func(string) [][]ent {
			return [][]ent{{dir("real/"), symlink("lnk", "real"), file("lnk/x", "x")}}
		}, "lnk/x", ReasonParentSymlink},
		{"directory through symlink", func(c string) [][]ent {
			return [][]ent{{symlink("a", c), dir("a/newdir/")}}
		}, "a/newdir/", ReasonParentSymlink},
		{"hardlink to outside (relative)", func(string) [][]ent {
			return [][]ent{{hardlink("h", "../canary/secret")}}
		}, "h", ReasonLinkEscapes},
		{"hardlink to outside (absolute)", func(c string) [][]ent {
			return [][]ent{{hardlink("h", c+"/secret")}}
		}, "h", ReasonLinkEscapes},
		{"hardlink to host file", func(string) [][]ent {
			return [][]ent{{hardlink("h", "/etc/passwd")}}
		}, "h", ReasonLinkEscapes},
		{"hardlink through symlink", func(c string) [][]ent {
			return [][]ent{{symlink("l", c), hardlink("h", "l/secret")}}
		}, "h", ReasonParentSymlink},
		{"hardlink before target", func(string) [][]ent {
			return [][]ent{{hardlink("h", "later"), file("later", "x")}}
		}, "h", ReasonLinkMissing},
		{"hardlink to directory", func(string) [][]ent {
			return [][]ent{{dir("d/"), hardlink("h", "d")}}
		}, "h", ReasonLinkToDir},
		{"whiteout through symlink", func(c string) [][]ent {
			return [][]ent{{symlink("a", c)}, {file("a/.wh.secret", "")}}
		}, "a/.wh.secret", ReasonParentSymlink},
		{"opaque through symlink", func(c string) [][]ent {
			return [][]ent{{symlink("a", c)}, {file("a/.wh..wh..opq", "")}}
		}, "a/.wh..wh..opq", ReasonParentSymlink},
		{"whiteout of parent", func(string) [][]ent {
			return [][]ent{{dir("d/"), file("d/.wh..", "")}}
		}, "d/.wh..", ReasonBadWhiteout},
		{"file under a file", func(string) [][]ent {
			return [][]ent{{file("f", "x"), file("f/g", "y")}}
		}, "f/g", ReasonParentNotDir},
		{"root replaced", func(string) [][]ent {
			return [][]ent{{symlink(".", "/")}}
		}, ".", ReasonRootNotDir},
		{"empty symlink", func(string) [][]ent {
			return [][]ent{{symlink("s", "")}}
		}, "s", ReasonEmptySymlink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, root, canary := sandboxDirs(t)
			before := snapshot(t, canary)
			var layers [][]byte
			for _, l := range tc.layers(canary) {
				layers = append(layers, tarBytes(t, l...))
			}
			_, err := extractLayers(t, root, Options{}, layers...)
			var ee *EntryError
			if !errors.As(err, &ee) || !errors.Is(err, ErrUnsafeEntry) {
				t.Fatalf("err = %v, want an EntryError", err)
			}
			if ee.Reason != tc.reason || (tc.entry != "" && ee.Name != tc.entry) {
				t.Fatalf("refused %q for %q, want %q for %q", ee.Name, ee.Reason, tc.entry, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("message %q lacks the reason", err)
			}
			checkContained(t, base, before)
			if _, err := os.Lstat("/etc/airlock-image-test-absent"); !os.IsNotExist(err) {
				t.Fatal("extraction wrote into the host's /etc")
			}
		})
	}
}

// Entries that replace a symlink replace the link itself: neutralised,
// not refused.
func TestExtractReplacesSymlinkNotTarget(t *testing.T) {
	base, root, canary := sandboxDirs(t)
	before := snapshot(t, canary)
	_, err := extractLayers(t, root, Options{},
		tarBytes(t, symlink("f", canary+"/secret"), symlink("d", canary), symlink("h", canary+"/passwd"), file("target", "t")),
		tarBytes(t, file("f", "new"), dir("d/"), file("d/x", "inside"), hardlink("h", "target")),
	)
	if err != nil {
		t.Fatal(err)
	}
	checkContained(t, base, before)
	tree := readTree(t, root)
	if tree["f"] != "new" || tree["d"] != "dir" || tree["d/x"] != "inside" || tree["h"] != "t" {
		t.Fatalf("tree = %v", tree)
	}
}

func TestExtractSpecialFilesAndModes(t *testing.T) {
	base, root, canary := sandboxDirs(t)
	before := snapshot(t, canary)
	suid := file("bin/su", "setuid")
	suid.mode = 0o4755
	sgid := file("bin/wall", "setgid")
	sgid.mode = 0o2755
	ro := dir("ro/")
	ro.mode = 0o555
	sticky := dir("tmp/")
	sticky.mode = 0o1777
	st, err := extractLayers(t, root, Options{}, tarBytes(t,
		ent{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		ent{name: "dev/sda", typ: tar.TypeBlock, mode: 0o660},
		ent{name: "run/fifo", typ: tar.TypeFifo, mode: 0o644},
		suid, sgid, ro, file("ro/inside", "x"), sticky,
	))
	if err != nil {
		t.Fatal(err)
	}
	checkContained(t, base, before)
	if st.SkippedSpecial != 3 || st.StrippedSetID != 2 {
		t.Fatalf("stats = %+v", st)
	}
	for _, p := range []string{"dev/null", "dev/sda", "run/fifo"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Fatalf("%s exists: %v", p, err)
		}
	}
	modes := map[string]os.FileMode{"bin/su": 0o755, "bin/wall": 0o755, "ro": os.ModeDir | 0o755, "tmp": os.ModeDir | os.ModeSticky | 0o777, ".": os.ModeDir | 0o755}
	for p, want := range modes {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != want {
			t.Errorf("%s mode %v, want %v", p, got, want)
		}
	}
}

func TestExtractCaps(t *testing.T) {
	_, root, _ := sandboxDirs(t)
	big := file("big", strings.Repeat("x", 4096))
	_, err := extractLayers(t, root, Options{MaxBytes: 1000}, tarBytes(t, big))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "files written exceed the cap of 1000 bytes") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "big")); !os.IsNotExist(err) {
		t.Fatal("over-cap file was written")
	}
	_, root2, _ := sandboxDirs(t)
	var many []ent
	for i := range 20 {
		many = append(many, file("f"+strings.Repeat("x", i), ""))
	}
	_, err = extractLayers(t, root2, Options{MaxEntries: 10}, tarBytes(t, many...))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 10 tar entries") {
		t.Fatalf("err = %v", err)
	}
}

func TestExtractWhiteouts(t *testing.T) {
	_, root, _ := sandboxDirs(t)
	st, err := extractLayers(t, root, Options{},
		tarBytes(t, dir("a/"), file("a/gone", "1"), file("a/kept", "2"), dir("opq/"), file("opq/old", "3"), dir("opq/olddir/"), file("opq/olddir/f", "4"), dir("gonedir/"), file("gonedir/f", "5")),
		tarBytes(t,
			file("a/.wh.gone", ""),
			file(".wh.gonedir", ""),
			file("opq/new", "6"),                      // made by this layer before the marker: kept
			file("opq/.wh..wh..opq", ""),              // hides only lower layers' entries
			file("fresh", "7"), file(".wh.fresh", ""), // same layer: the whiteout spares it
			file(".wh.never-existed", ""),
			file("a/.wh..wh.plnk", ""), // other aufs meta: ignored
		),
	)
	if err != nil {
		t.Fatal(err)
	}
	got := readTree(t, root)
	want := map[string]string{"a": "dir", "a/kept": "2", "opq": "dir", "opq/new": "6", "fresh": "7"}
	if len(got) != len(want) {
		t.Fatalf("tree = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("tree = %v, want %v", got, want)
		}
	}
	if st.Whiteouts != 5 {
		t.Fatalf("whiteouts = %d", st.Whiteouts)
	}
}

func TestExtractHardlinkIsolation(t *testing.T) {
	_, root, _ := sandboxDirs(t)
	_, err := extractLayers(t, root, Options{},
		tarBytes(t, file("f", "old"), hardlink("h", "f"), symlink("s", "/nowhere"), hardlink("hs", "s")),
		tarBytes(t, file("h", "new")), // replaces h; f keeps its content
	)
	if err != nil {
		t.Fatal(err)
	}
	tree := readTree(t, root)
	if tree["f"] != "old" || tree["h"] != "new" || tree["hs"] != "-> /nowhere" {
		t.Fatalf("tree = %v", tree)
	}
	var a, b syscall.Stat_t
	syscall.Lstat(filepath.Join(root, "s"), &a)
	syscall.Lstat(filepath.Join(root, "hs"), &b)
	if a.Ino != b.Ino {
		t.Fatal("hardlink to a symlink did not link the symlink itself")
	}
}
