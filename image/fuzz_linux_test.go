package image

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// extractSeeds are layer pairs that hit every refusal and replacement path.
func extractSeeds(t testing.TB) [][2][]byte {
	return [][2][]byte{
		{tarBytes(t, file("../canary/secret", "x")), nil},
		{tarBytes(t, symlink("a", "../canary")), tarBytes(t, file("a/passwd", "x"))},
		{tarBytes(t, symlink("a", "../canary"), hardlink("h", "a/secret")), nil},
		{tarBytes(t, hardlink("h", "../canary/secret")), nil},
		{tarBytes(t, dir("d/"), file("d/f", "x"), symlink("l", "d")), tarBytes(t, file("d/.wh.f", ""), file("l/.wh..wh..opq", ""), file(".wh.d", ""))},
		{tarBytes(t, symlink("s", "../canary/secret")), tarBytes(t, file("s", "replaced"), dir("s/"))},
		{tarBytes(t, file("f", "x"), hardlink("g", "f")), tarBytes(t, file("g", "y"), file("f/x", ""))},
		{tarBytes(t, ent{name: "dev/null", typ: tar.TypeChar}, file("/abs", "x")), nil},
	}
}

// FuzzExtract feeds two arbitrary tar streams, as two layers, to the
// extractor: it must not panic, and nothing beside the root may change.
func FuzzExtract(f *testing.F) {
	for _, s := range extractSeeds(f) {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		base, root, canary := sandboxDirs(t)
		before := snapshot(t, canary)
		var st Stats
		x, err := newExtractor(root, Options{MaxBytes: 1 << 20, MaxEntries: 1000}, &st)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.layer(context.Background(), 1, tar.NewReader(bytes.NewReader(a))); err == nil {
			x.layer(context.Background(), 2, tar.NewReader(bytes.NewReader(b)))
		}
		x.finish()
		x.close()
		checkContained(t, base, before)
	})
}

// FuzzVerifyArchive feeds arbitrary bytes as an image archive: errors
// only, no panic, and a digest it did not hash never verifies.
func FuzzVerifyArchive(f *testing.F) {
	img := simpleImage(f)
	dir := f.TempDir()
	f.Add(readFile(f, writeDockerArchive(f, filepath.Join(dir, "d.tar"), img)))
	f.Add(readFile(f, tarDir(f, writeLayout(f, filepath.Join(dir, "oci"), img), filepath.Join(dir, "o.tar"))))
	f.Add(readFile(f, writeLegacyDockerSave(f, filepath.Join(dir, "l.tar"), img)))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "img.tar")
		os.WriteFile(p, data, 0o644)
		for _, d := range []string{digestOf(t, img).Hex, configDigestOf(t, img).Hex} {
			ref, _ := ParseRef(p + "@sha256:" + d)
			if v, err := Verify(context.Background(), ref); err == nil && v.Digest != ref.Digest {
				t.Fatalf("verified %s as %s", v.Digest, ref.Digest)
			}
		}
	})
}

func readFile(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
