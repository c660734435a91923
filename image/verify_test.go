package image

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func simpleImage(t testing.TB) v1.Image {
	return imageOf(t,
		layerOf(t, dir("bin/"), file("bin/app", "#!/bin/sh\n"), file("etc/os-release", "airlock-test\n")),
		layerOf(t, file("etc/motd", "hello\n")),
	)
}

// wantMismatch checks err is a *MismatchError about what, naming both digests.
func wantMismatch(t *testing.T, err error, what string, expected, actual v1.Hash) {
	t.Helper()
	var mm *MismatchError
	if !errors.As(err, &mm) || !errors.Is(err, ErrMismatch) {
		t.Fatalf("err = %v, want a %s MismatchError", err, what)
	}
	if mm.What != what || mm.Expected != expected || (actual != v1.Hash{} && mm.Actual != actual) {
		t.Fatalf("mismatch = %+v, want %s expected %s actual %s", mm, what, expected, actual)
	}
	msg := err.Error()
	if !strings.Contains(msg, what+" digest mismatch") || !strings.Contains(msg, "expected "+expected.String()) || !strings.Contains(msg, "got "+mm.Actual.String()) {
		t.Fatalf("message %q does not name both digests", msg)
	}
}

func TestVerifyLayout(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	ref := Ref{Path: dir, Digest: digestOf(t, img)}
	v, err := Verify(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if v.Digest != ref.Digest || v.ImageDigest != ref.Digest || v.Format != FormatOCILayout || !v.LayersVerified {
		t.Fatalf("verified = %+v", v)
	}
	if v.ConfigDigest != configDigestOf(t, img) || len(v.Manifest.Layers) != 2 {
		t.Fatalf("config %s, %d layers", v.ConfigDigest, len(v.Manifest.Layers))
	}
	if got := v.Config.Config.Entrypoint; len(got) != 1 || got[0] != "/bin/app" {
		t.Fatalf("entrypoint = %v", got)
	}
	// go-containerregistry's own validation agrees on the layout it wrote.
	li, err := layout.Path(dir).Image(ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(li); err != nil {
		t.Fatalf("validate.Image: %v", err)
	}
}

func TestVerifyRandomImage(t *testing.T) {
	// random.Image layers are random bytes in tar form: a second builder.
	img, err := random.Image(4096, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := writeLayout(t, t.TempDir(), img)
	if _, err := Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyTamperedLayer(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	ld := layerDigests(t, img)[1]
	flipByte(t, blobPath(dir, ld))
	b, _ := os.ReadFile(blobPath(dir, ld))
	_, err := Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)})
	wantMismatch(t, err, "layer", ld, sha256Of(b))
	if !strings.Contains(err.Error(), "(layer 2 of 2)") {
		t.Fatalf("err %q does not say which layer", err)
	}
	// go-containerregistry's validation finds the same fault.
	li, _ := layout.Path(dir).Image(digestOf(t, img))
	if err := validate.Image(li); err == nil {
		t.Fatal("validate.Image accepted a tampered layer")
	}
}

func TestVerifyGrownLayer(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	ld := layerDigests(t, img)[0]
	f, err := os.OpenFile(blobPath(dir, ld), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("trailing"))
	f.Close()
	_, err = Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)})
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.What != "layer" || !strings.Contains(err.Error(), "layer size mismatch (layer 1 of 2)") {
		t.Fatalf("err = %v, want a layer size mismatch", err)
	}
}

func TestVerifyTamperedManifest(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	d := digestOf(t, img)
	// Rewrite the manifest, under the same name.
	b, _ := os.ReadFile(blobPath(dir, d))
	tampered := []byte(strings.Replace(string(b), `"layers":[`, `"layers": [`, 1))
	if err := os.WriteFile(blobPath(dir, d), tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Verify(context.Background(), Ref{Path: dir, Digest: d})
	wantMismatch(t, err, "manifest", d, sha256Of(tampered))
}

func TestVerifyTamperedConfig(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	cd := configDigestOf(t, img)
	b, _ := os.ReadFile(blobPath(dir, cd))
	tampered := bytes.Replace(b, []byte("/bin/app"), []byte("/bin/evil"), 1)
	os.WriteFile(blobPath(dir, cd), tampered, 0o644)
	_, err := Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)})
	wantMismatch(t, err, "config", cd, sha256Of(tampered))
}

func TestVerifyWrongPin(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	wrong := sha256Of([]byte("not this image"))
	_, err := Verify(context.Background(), Ref{Path: dir, Digest: wrong})
	wantMismatch(t, err, "manifest", wrong, digestOf(t, img))
	if !strings.Contains(err.Error(), "the only image in OCI layout") {
		t.Fatalf("err = %v", err)
	}

	// Two images: the pin names neither, and the error lists both.
	other := imageOf(t, layerOf(t, file("x", "y")))
	dir2 := writeLayout(t, t.TempDir(), img, other)
	_, err = Verify(context.Background(), Ref{Path: dir2, Digest: wrong})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), digestOf(t, img).String()) || !strings.Contains(err.Error(), digestOf(t, other).String()) {
		t.Fatalf("err = %v, want not found listing both images", err)
	}
	// Each of the two verifies when pinned.
	for _, im := range []v1.Image{img, other} {
		if _, err := Verify(context.Background(), Ref{Path: dir2, Digest: digestOf(t, im)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVerifyRefusesSymlinkedBlob(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	ld := layerDigests(t, img)[0]
	p := blobPath(dir, ld)
	moved := filepath.Join(t.TempDir(), "blob")
	if err := os.Rename(p, moved); err != nil {
		t.Fatal(err)
	}
	os.Symlink(moved, p)
	if _, err := Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("err = %v, want a refused symlinked blob", err)
	}
}

func platformImage(t *testing.T, arch string, body string) v1.Image {
	img := imageOf(t, layerOf(t, file("arch", body)))
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.Architecture = arch
	img, err := mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func writeIndexLayout(t *testing.T, imgs map[string]v1.Image) (string, v1.Hash) {
	var adds []mutate.IndexAddendum
	for arch, img := range imgs {
		a := strings.TrimSuffix(arch, "#2")
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return dir, d
}

func TestVerifyIndexSelectsPlatform(t *testing.T) {
	other := "s390x"
	if runtime.GOARCH == other {
		other = "arm64"
	}
	mine := platformImage(t, runtime.GOARCH, "mine")
	dir, idx := writeIndexLayout(t, map[string]v1.Image{runtime.GOARCH: mine, other: platformImage(t, other, "other")})
	v, err := Verify(context.Background(), Ref{Path: dir, Digest: idx})
	if err != nil {
		t.Fatal(err)
	}
	if v.Digest != idx || v.ImageDigest != digestOf(t, mine) {
		t.Fatalf("digest %s image %s, want %s / %s", v.Digest, v.ImageDigest, idx, digestOf(t, mine))
	}

	// No manifest for this platform.
	dir, idx = writeIndexLayout(t, map[string]v1.Image{other: platformImage(t, other, "other")})
	_, err = Verify(context.Background(), Ref{Path: dir, Digest: idx})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "no linux/"+runtime.GOARCH+" manifest (it has: linux/"+other+")") {
		t.Fatalf("err = %v", err)
	}
	// Two for this platform: ambiguous, refused.
	dir, idx = writeIndexLayout(t, map[string]v1.Image{runtime.GOARCH: mine, runtime.GOARCH + "#2": platformImage(t, runtime.GOARCH, "second")})
	_, err = Verify(context.Background(), Ref{Path: dir, Digest: idx})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "pin one of them") {
		t.Fatalf("err = %v", err)
	}
}

func TestVerifyRefusesForeignPlatform(t *testing.T) {
	other := "s390x"
	if runtime.GOARCH == other {
		other = "arm64"
	}
	img := platformImage(t, other, "x")
	dir := writeLayout(t, t.TempDir(), img)
	_, err := Verify(context.Background(), Ref{Path: dir, Digest: digestOf(t, img)})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "image is for linux/"+other) {
		t.Fatalf("err = %v", err)
	}
}

func TestVerifyNotAnImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(dir string) string
		want string
	}{
		{"missing", func(dir string) string { return filepath.Join(dir, "nope") }, "no such file"},
		{"empty dir", func(dir string) string { return dir }, "not an OCI image layout"},
		{"not a tar", func(dir string) string {
			p := filepath.Join(dir, "x")
			os.WriteFile(p, []byte("hello, this is not a tar archive at all, not even close to 512 bytes"), 0o644)
			return p
		}, "not a tar archive"},
		{"gzip", func(dir string) string {
			p := filepath.Join(dir, "x.tar.gz")
			os.WriteFile(p, []byte{0x1f, 0x8b, 8, 0, 0, 0}, 0o644)
			return p
		}, "compressed archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(context.Background(), Ref{Path: tc.make(t.TempDir()), Digest: sha256Of(nil)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVerifyDockerArchive(t *testing.T) {
	img := simpleImage(t)
	p := writeDockerArchive(t, filepath.Join(t.TempDir(), "img.tar"), img)
	id := configDigestOf(t, img)
	v, err := Verify(context.Background(), Ref{Path: p, Digest: id})
	if err != nil {
		t.Fatal(err)
	}
	if v.Format != FormatDockerArchive || v.ImageDigest != id || v.Manifest != nil || !v.LayersVerified {
		t.Fatalf("verified = %+v", v)
	}
	// The manifest digest names nothing in a legacy archive: the error
	// says what to pin instead.
	_, err = Verify(context.Background(), Ref{Path: p, Digest: digestOf(t, img)})
	wantMismatch(t, err, "config", digestOf(t, img), id)
	if !strings.Contains(err.Error(), "pinned by its image ID") {
		t.Fatalf("err = %v, want a hint", err)
	}
}

func TestVerifyLegacyDockerSaveTampered(t *testing.T) {
	img := simpleImage(t)
	p := writeLegacyDockerSave(t, filepath.Join(t.TempDir(), "img.tar"), img)
	id := configDigestOf(t, img)
	if _, err := Verify(context.Background(), Ref{Path: p, Digest: id}); err != nil {
		t.Fatal(err)
	}
	// Change one byte of a file's content inside the uncompressed layer.
	b, _ := os.ReadFile(p)
	i := bytes.Index(b, []byte("airlock-test\n"))
	b[i] = 'A'
	os.WriteFile(p, b, 0o644)
	ls, _ := img.Layers()
	diffID, _ := ls[0].DiffID()
	_, err := Verify(context.Background(), Ref{Path: p, Digest: id})
	wantMismatch(t, err, "layer diff_id", diffID, v1.Hash{})
}

func TestVerifyOCIArchive(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	p := tarDir(t, dir, filepath.Join(t.TempDir(), "oci.tar"))
	v, err := Verify(context.Background(), Ref{Path: p, Digest: digestOf(t, img)})
	if err != nil {
		t.Fatal(err)
	}
	if v.Format != FormatOCIArchive {
		t.Fatalf("format %s", v.Format)
	}
	ld := layerDigests(t, img)[0]
	flipByte(t, blobPath(dir, ld))
	p2 := tarDir(t, dir, filepath.Join(t.TempDir(), "oci2.tar"))
	_, err = Verify(context.Background(), Ref{Path: p2, Digest: digestOf(t, img)})
	wantMismatch(t, err, "layer", ld, v1.Hash{})
}

// A docker 25+ save holds the OCI layout and a manifest.json naming the
// config and layers as blobs: the manifest digest takes the OCI path, the
// image ID the docker-archive one.
func TestVerifyDocker25Save(t *testing.T) {
	img := simpleImage(t)
	dir := writeLayout(t, t.TempDir(), img)
	var layers []string
	for _, d := range layerDigests(t, img) {
		layers = append(layers, `"blobs/sha256/`+d.Hex+`"`)
	}
	id := configDigestOf(t, img)
	mj := `[{"Config":"blobs/sha256/` + id.Hex + `","RepoTags":["x:latest"],"Layers":[` + strings.Join(layers, ",") + `]}]`
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(mj), 0o644)
	p := tarDir(t, dir, filepath.Join(t.TempDir(), "save.tar"))
	v, err := Verify(context.Background(), Ref{Path: p, Digest: digestOf(t, img)})
	if err != nil || v.Format != FormatOCIArchive {
		t.Fatalf("manifest pin: %v %+v", err, v)
	}
	v, err = Verify(context.Background(), Ref{Path: p, Digest: id})
	if err != nil || v.Format != FormatDockerArchive || v.ImageDigest != id {
		t.Fatalf("image ID pin: %v %+v", err, v)
	}
}
