package testutil

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// CatImage writes an OCI layout holding one image whose root has the
// host's cat, the libraries it needs, /etc/marker, /root and /home; it returns the
// layout's path and the image's digest.
func CatImage(t testing.TB) (string, v1.Hash) {
	t.Helper()
	out, err := exec.Command("ldd", "/usr/bin/cat").Output()
	if err != nil {
		t.Skipf("ldd: %v", err)
	}
	files := []string{"/usr/bin/cat"}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "/") {
			files = append(files, f)
		}
	}
	var entries []TarEntry
	dirs := map[string]bool{}
	for _, f := range append(files, "/etc/marker") {
		for d := filepath.Dir(f); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	// Like a distribution image, it has homes (which the sandbox hides).
	dirs["/root"], dirs["/home"], dirs["/home/user"] = true, true, true
	for d := range dirs {
		entries = append(entries, TarEntry{Name: strings.TrimPrefix(d, "/"), Dir: true, Mode: 0o755})
	}
	for _, f := range files {
		// FromFile follows the library links to their files.
		entries = append(entries, TarEntry{Name: strings.TrimPrefix(f, "/"), Mode: 0o755, FromFile: f})
	}
	entries = append(entries, TarEntry{Name: "etc/marker", Mode: 0o644, Data: []byte("from the image\n")})
	archive := tarOf(t, entries)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(archive)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	return dir, WriteLayout(t, dir, img)
}

// WriteLayout writes img as the one image of a new OCI layout at dir and
// returns its digest.
func WriteLayout(t testing.TB, dir string, img v1.Image) v1.Hash {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
