package testutil

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
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
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, body []byte, mode int64) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	dirs := map[string]bool{}
	for _, f := range append(files, "/etc/marker") {
		for d := filepath.Dir(f); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	// Like a distribution image, it has homes (which the sandbox hides).
	dirs["/root"], dirs["/home"], dirs["/home/user"] = true, true, true
	for d := range dirs {
		tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, Typeflag: tar.TypeDir})
	}
	for _, f := range files {
		b, err := os.ReadFile(f) // follows the library links to their files
		if err != nil {
			t.Fatal(err)
		}
		add(strings.TrimPrefix(f, "/"), b, 0o755)
	}
	add("etc/marker", []byte("from the image\n"), 0o644)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
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
