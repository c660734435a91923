package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// twoLayerImage exercises files, dirs, symlinks, hardlinks, whiteouts and
// opaque directories across two layers.
func twoLayerImage(t testing.TB) v1.Image {
	suid := file("usr/bin/passwd", "suid")
	suid.mode = 0o4755
	return imageOf(t,
		layerOf(t,
			dir("./"), dir("etc/"), file("etc/hostname", "one"), file("etc/old.conf", "old"),
			dir("usr/"), dir("usr/bin/"), file("usr/bin/tool", "#!/bin/sh\necho tool\n"), suid,
			symlink("bin", "usr/bin"), symlink("etc/localtime", "/usr/share/zoneinfo/UTC"),
			hardlink("usr/bin/tool-alias", "usr/bin/tool"),
			dir("var/cache/"), file("var/cache/a", "a"), dir("var/cache/sub/"), file("var/cache/sub/b", "b"),
			dir("gone/"), file("gone/x", "x"),
		),
		layerOf(t,
			file("etc/hostname", "two"), file("etc/.wh.old.conf", ""), file(".wh.gone", ""),
			dir("var/cache/"), file("var/cache/.wh..wh..opq", ""), file("var/cache/fresh", "fresh"),
			file("usr/bin/.wh.tool", ""), file("usr/bin/tool", "#!/bin/sh\necho tool v2\n"),
		),
	)
}

func wantTwoLayerTree(t *testing.T, root string) {
	t.Helper()
	got := readTree(t, root)
	want := map[string]string{
		"etc": "dir", "etc/hostname": "two", "etc/localtime": "-> /usr/share/zoneinfo/UTC",
		"usr": "dir", "usr/bin": "dir", "usr/bin/tool": "#!/bin/sh\necho tool v2\n", "usr/bin/passwd": "suid",
		"usr/bin/tool-alias": "#!/bin/sh\necho tool\n", "bin": "-> usr/bin",
		"var": "dir", "var/cache": "dir", "var/cache/fresh": "fresh",
	}
	if len(got) != len(want) {
		t.Fatalf("tree = %v\nwant %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q (tree %v)", k, got[k], v, got)
		}
	}
	fi, _ := os.Stat(filepath.Join(root, "usr/bin/passwd"))
	if fi.Mode() != 0o755 {
		t.Fatalf("setuid not stripped: %v", fi.Mode())
	}
}

// flattened returns go-containerregistry's own flattening (mutate.Extract)
// of img: an independent reading of the whiteout rules.
func flattened(t *testing.T, img v1.Image) map[string]string {
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		n := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		switch h.Typeflag {
		case tar.TypeDir:
			out[n] = "dir"
		case tar.TypeSymlink:
			out[n] = "-> " + h.Linkname
		case tar.TypeLink:
			out[n] = "link " + h.Linkname
		default:
			b, _ := io.ReadAll(tr)
			out[n] = string(b)
		}
	}
}

func TestPrepareTwoLayers(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	cache := t.TempDir()
	ref := Ref{Path: dir, Digest: digestOf(t, img)}
	p, err := Prepare(context.Background(), ref, cache, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Cached || !p.LayersVerified || p.Stats.Layers != 2 || p.Stats.StrippedSetID != 1 || p.Stats.Hardlinks != 1 {
		t.Fatalf("prepared = %+v stats %+v", p, p.Stats)
	}
	wantRoot := filepath.Join(cache, "sha256", ref.Digest.Hex, "user", "rootfs")
	if p.Rootfs != wantRoot {
		t.Fatalf("rootfs %s, want %s", p.Rootfs, wantRoot)
	}
	wantTwoLayerTree(t, p.Rootfs)

	// The same paths as go-containerregistry's flattening, but for two
	// known differences.
	known := map[string]string{
		"var": "a parent the tar does not list: tar extraction makes it, mutate.Extract lists only entries",
		// Layer 2 whites out usr/bin/tool and then adds it again. The OCI
		// spec: a whiteout applies only to lower layers, so the new file
		// stays; mutate.Extract drops it.
		"usr/bin/tool": "same-layer whiteout then re-creation",
	}
	flat := flattened(t, img)
	tree := readTree(t, p.Rootfs)
	for k := range flat {
		if _, ok := tree[k]; !ok && k != "." {
			t.Errorf("mutate.Extract has %s, the unpack does not", k)
		}
	}
	for k := range tree {
		if _, ok := flat[k]; !ok && known[k] == "" {
			t.Errorf("the unpack has %s, mutate.Extract does not", k)
		}
	}
	var a, b syscall.Stat_t
	syscall.Stat(filepath.Join(p.Rootfs, "usr/bin/tool-alias"), &a)
	syscall.Stat(filepath.Join(p.Rootfs, "usr/bin/tool"), &b)
	if a.Ino == b.Ino {
		t.Fatal("tool-alias should keep the first layer's inode")
	}
	// The directories the cache made are private; no temp dirs remain.
	for _, d := range []string{filepath.Join(cache, "sha256"), filepath.Join(cache, "tmp"), filepath.Dir(p.Rootfs)} {
		fi, _ := os.Stat(d)
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %v", d, fi.Mode())
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "tmp")); len(ents) != 0 {
		t.Fatalf("temp dirs left: %v", ents)
	}

	// Second run: reused, not unpacked again.
	p2, err := Prepare(context.Background(), ref, cache, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p2.Cached || p2.Rootfs != p.Rootfs || p2.Stats != p.Stats {
		t.Fatalf("second prepare = %+v", p2)
	}
}

func TestVerifyThenUnpack(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	v, err := Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := unpack(context.Background(), v, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantTwoLayerTree(t, p.Rootfs)
}

// A blob swapped after Verify is caught while unpacking, and nothing
// reaches the cache.
func TestUnpackCatchesLayerChangedAfterVerify(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	v, err := Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)})
	if err != nil {
		t.Fatal(err)
	}
	ld := layerDigests(t, img)[1]
	flipByte(t, blobPath(dir, ld))
	tampered, _ := os.ReadFile(blobPath(dir, ld))
	cache := t.TempDir()
	_, err = unpack(context.Background(), v, cache, Options{})
	wantMismatch(t, err, "layer", ld, sha256Of(tampered))
	assertNoEntry(t, cache)
}

func assertNoEntry(t *testing.T, cache string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(cache, "sha256")); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(filepath.Join(cache, "sha256"))
		if len(ents) != 0 {
			t.Fatalf("cache has entries after a failed unpack: %v", ents)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "tmp")); len(ents) != 0 {
		t.Fatalf("temp dirs left: %v", ents)
	}
}

func TestPrepareTamperedLayer(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	ld := layerDigests(t, img)[0]
	flipByte(t, blobPath(dir, ld))
	tampered, _ := os.ReadFile(blobPath(dir, ld))
	cache := t.TempDir()
	_, err := Prepare(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}, cache, Options{})
	wantMismatch(t, err, "layer", ld, sha256Of(tampered))
	assertNoEntry(t, cache)
}

// A layer whose tar refuses an entry: the whole unpack is refused, the
// cache is left without an entry and nothing is written beside the root.
func TestPrepareRefusesTraversalImage(t *testing.T) {
	img := imageOf(t, layerOf(t, file("ok", "fine"), file("../../../../../../tmp/airlock-pwned", "x")))
	dir := writeLayout(t, t.TempDir(), img)
	cache := t.TempDir()
	_, err := Prepare(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}, cache, Options{})
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Reason != ReasonDotDot || ee.Layer != 1 {
		t.Fatalf("err = %v", err)
	}
	assertNoEntry(t, cache)
	if _, err := os.Lstat("/tmp/airlock-pwned"); !os.IsNotExist(err) {
		t.Fatal("traversal wrote outside the cache")
	}
}

// A decompression bomb: a small gzip layer that inflates past the cap.
func TestPrepareBombStopsAtCap(t *testing.T) {
	zeros := make([]byte, 8<<20) // 8 MiB of zeros in one file: ~8 KiB gzipped
	img := imageOf(t, layerOf(t, file("zeros", string(zeros))))
	dir := writeLayout(t, t.TempDir(), img)
	cache := t.TempDir()
	ld := layerDigests(t, img)[0]
	if fi, _ := os.Stat(blobPath(dir, ld)); fi.Size() > 64<<10 {
		t.Fatalf("layer is %d bytes, not a bomb", fi.Size())
	}
	_, err := Prepare(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}, cache, Options{MaxBytes: 1 << 20})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "cap of 1048576 bytes") {
		t.Fatalf("err = %v", err)
	}
	assertNoEntry(t, cache)

	// Trailing zeros after the tar's end are counted too.
	var buf bytes.Buffer
	buf.Write(tarBytes(t, file("small", "x")))
	buf.Write(make([]byte, 4<<20))
	img2 := imageOf(t, layerFromTar(t, buf.Bytes()))
	dir2 := writeLayout(t, t.TempDir(), img2)
	_, err = Prepare(context.Background(), Ref{Path: dir2, Digest: digestOf(t, img2)}, cache, Options{MaxBytes: 1 << 20})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("trailing data: err = %v", err)
	}
}

func TestPrepareZstdAndUncompressedLayers(t *testing.T) {
	raw := tarBytes(t, file("z", "zstd layer"))
	zl, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithCompression("zstd"), tarball.WithMediaType(types.OCILayerZStd))
	if err != nil {
		t.Fatal(err)
	}
	img := imageOf(t, zl)
	// An uncompressed OCI layer, stored as plain tar.
	ul := &plainLayer{b: tarBytes(t, file("u", "plain layer"))}
	img, err = mutate.Append(img, mutate.Addendum{Layer: ul, MediaType: types.OCIUncompressedLayer})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	dir := writeLayout(t, t.TempDir(), img)
	p, err := Prepare(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree := readTree(t, p.Rootfs)
	if tree["z"] != "zstd layer" || tree["u"] != "plain layer" {
		t.Fatalf("tree = %v", tree)
	}
}

// plainLayer is an uncompressed layer whose stored bytes are the tar itself.
type plainLayer struct{ b []byte }

func (l *plainLayer) Digest() (v1.Hash, error) { return sha256Of(l.b), nil }
func (l *plainLayer) DiffID() (v1.Hash, error) { return sha256Of(l.b), nil }
func (l *plainLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.b)), nil
}
func (l *plainLayer) Uncompressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.b)), nil
}
func (l *plainLayer) Size() (int64, error)                { return int64(len(l.b)), nil }
func (l *plainLayer) MediaType() (types.MediaType, error) { return types.OCIUncompressedLayer, nil }

func TestPrepareDockerArchives(t *testing.T) {
	img := twoLayerImage(t)
	id := configDigestOf(t, img)
	for name, p := range map[string]string{
		"ggcr tarball":        writeDockerArchive(t, filepath.Join(t.TempDir(), "img.tar"), img),
		"classic docker save": writeLegacyDockerSave(t, filepath.Join(t.TempDir(), "save.tar"), img),
	} {
		t.Run(name, func(t *testing.T) {
			cache := t.TempDir()
			pr, err := Prepare(context.Background(), Ref{Path: p, Digest: id}, cache, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if pr.Format != FormatDockerArchive || filepath.Base(filepath.Dir(filepath.Dir(pr.Rootfs))) != id.Hex {
				t.Fatalf("prepared %+v", pr)
			}
			wantTwoLayerTree(t, pr.Rootfs)
		})
	}
}

func TestPrepareOCIArchive(t *testing.T) {
	img := twoLayerImage(t)
	p := tarDir(t, writeLayout(t, t.TempDir(), img), filepath.Join(t.TempDir(), "oci.tar"))
	pr, err := Prepare(context.Background(), Ref{Path: p, Digest: digestOf(t, img)}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantTwoLayerTree(t, pr.Rootfs)
}

func TestPrepareReverify(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	cache := t.TempDir()
	ref := Ref{Path: dir, Digest: digestOf(t, img)}
	p, err := Prepare(context.Background(), ref, cache, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Untampered: Reverify agrees and keeps the entry.
	p2, err := Prepare(context.Background(), ref, cache, Options{Reverify: true})
	if err != nil || !p2.Cached || p2.Rootfs != p.Rootfs {
		t.Fatalf("reverify of a good cache: %v %+v", err, p2)
	}
	// Tamper with the cached tree.
	for _, tc := range []struct {
		name   string
		tamper func(root string)
		want   string
	}{
		{"content", func(r string) { os.WriteFile(filepath.Join(r, "etc/hostname"), []byte("evil"), 0o644) }, `"etc/hostname" has different content`},
		{"added", func(r string) { os.WriteFile(filepath.Join(r, "etc/ld.so.preload"), []byte("/evil.so"), 0o644) }, `"etc/ld.so.preload" is in the cache but not in the image`},
		{"removed", func(r string) { os.Remove(filepath.Join(r, "usr/bin/tool")) }, `"usr/bin/tool" is in the image but missing from the cache`},
		{"added last", func(r string) { os.WriteFile(filepath.Join(r, "zzz"), nil, 0o644) }, `"zzz" is in the cache but not in the image`},
		{"mode", func(r string) { os.Chmod(filepath.Join(r, "usr/bin/tool"), 0o4777) }, `"usr/bin/tool" has mode`},
		{"symlink", func(r string) { os.Remove(filepath.Join(r, "bin")); os.Symlink("/tmp", filepath.Join(r, "bin")) }, `"bin" links to "/tmp"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			p, err := Prepare(context.Background(), ref, cache, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tc.tamper(p.Rootfs)
			// Without Reverify the cache is trusted (documented trust model).
			if p2, err := Prepare(context.Background(), ref, cache, Options{}); err != nil || !p2.Cached {
				t.Fatalf("cached prepare: %v", err)
			}
			_, err = Prepare(context.Background(), ref, cache, Options{Reverify: true})
			if !errors.Is(err, ErrCacheTampered) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			// The tampered entry stays as evidence; no temp dir is left.
			if _, err := os.Stat(p.Rootfs); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(filepath.Join(cache, "tmp")); len(ents) != 0 {
				t.Fatalf("temp dirs left: %v", ents)
			}
		})
	}
}

func TestPrepareRefusesSharedCache(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	cache := t.TempDir()
	os.Chmod(cache, 0o777)
	_, err := Prepare(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}, cache, Options{})
	if !errors.Is(err, ErrCacheUnsafe) || !strings.Contains(err.Error(), "writable by others") {
		t.Fatalf("err = %v", err)
	}
	os.Chmod(cache, 0o700)
	// A cache entry swapped for a symlink is refused, not followed.
	p, err := Prepare(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}, cache, Options{})
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Dir(p.Rootfs)
	moved := entry + ".moved"
	os.Rename(entry, moved)
	os.Symlink(moved, entry)
	_, err = Prepare(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}, cache, Options{})
	if !errors.Is(err, ErrCacheUnsafe) || !strings.Contains(err.Error(), "is not a directory") {
		t.Fatalf("err = %v, want a symlinked cache entry refused", err)
	}
}

func TestPrepareBrokenEntryIsNotUsed(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	cache := t.TempDir()
	ref := Ref{Path: dir, Digest: digestOf(t, img)}
	p, err := Prepare(context.Background(), ref, cache, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(p.Rootfs), markerName), []byte(`{"version":1,"imageDigest":"sha256:`+hex64+`"}`), 0o600)
	_, err = Prepare(context.Background(), ref, cache, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a complete unpack") {
		t.Fatalf("err = %v", err)
	}
}

func TestPrepareCancelled(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cache := t.TempDir()
	if _, err := Prepare(ctx, Ref{Path: dir, Digest: digestOf(t, img)}, cache, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	assertNoEntry(t, cache)
}

func TestOwnershipNeedsRootWhenRootless(t *testing.T) {
	testutil.RequireNonRoot(t)
	if err := (Options{Ownership: OwnershipImage}).check(); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("err = %v", err)
	}
}

// Racing unpacks of one image into one cache: one rename wins, the others
// reuse its entry, and no temporary directory is left.
func TestPrepareConcurrent(t *testing.T) {
	img := twoLayerImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	cache := t.TempDir()
	ref := Ref{Path: dir, Digest: digestOf(t, img)}
	const n = 4
	roots := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			p, err := Prepare(context.Background(), ref, cache, Options{})
			if err != nil {
				errs <- err
				return
			}
			roots <- p.Rootfs
		}()
	}
	var first string
	for range n {
		select {
		case err := <-errs:
			t.Fatal(err)
		case r := <-roots:
			if first != "" && r != first {
				t.Fatalf("rootfs %s and %s", first, r)
			}
			first = r
		}
	}
	wantTwoLayerTree(t, first)
	if ents, _ := os.ReadDir(filepath.Join(cache, "tmp")); len(ents) != 0 {
		t.Fatalf("temp dirs left: %v", ents)
	}
}

// A classic docker save whose layer tar is corrupted in a header: the tar
// reader fails first, and the error still names the diff_id mismatch.
func TestPrepareLegacyCorruptHeader(t *testing.T) {
	img := simpleImage(t)
	p := writeLegacyDockerSave(t, filepath.Join(t.TempDir(), "save.tar"), img)
	b, _ := os.ReadFile(p)
	i := bytes.Index(b, []byte("etc/os-release"))
	if i < 0 {
		t.Fatal("no header to corrupt")
	}
	b[i] = 'X' // breaks the header checksum
	os.WriteFile(p, b, 0o644)
	ls, _ := img.Layers()
	diffID, _ := ls[0].DiffID()
	cache := t.TempDir()
	_, err := Prepare(context.Background(), Ref{Path: p, Digest: configDigestOf(t, img)}, cache, Options{})
	wantMismatch(t, err, "layer diff_id", diffID, v1.Hash{})
	assertNoEntry(t, cache)
}
