package runbook_test

import (
	"archive/tar"
	"bytes"
	"context"
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

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
)

// catImage writes an OCI layout holding one image whose root has the
// host's cat, the libraries it needs, and /etc/marker; it returns the
// layout's path and the image's digest.
func catImage(t *testing.T) (string, v1.Hash) {
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
	return dir, d
}

// TestLaunchImage runs a plan on a pinned image: the step sees the
// image's root, and sandbox_launched names the digest.
func TestLaunchImage(t *testing.T) {
	testutil.RequireRoot(t)
	dir, d := catImage(t)
	e := newEnv(t)
	e.opts.Image = dir + "@" + d.String()
	e.opts.ImageCache = filepath.Join(e.dir, "cache")
	var out bytes.Buffer
	e.opts.Stdout = &out
	res, err := runbook.Launch(context.Background(), plan("T-image", runbook.Step{Command: "cat", Args: []string{"/etc/marker"}}), e.opts)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitOK || out.String() != "from the image\n" {
		t.Fatalf("result %+v, output %q", res, out.String())
	}
	if res.Image == nil || res.Image.Digest != d.String() {
		t.Errorf("image %+v, want digest %s", res.Image, d)
	}
	launched := lifecycle(e.events(t), audit.EventSandboxLaunched)
	if len(launched) != 1 || launched[0].Context.Details["imageDigest"] != d.String() || launched[0].Context.Details["testId"] != "T-image" {
		t.Fatalf("sandbox_launched: %+v", launched)
	}
}

// TestLaunchImageMismatch: an image that does not match its pin refuses
// the launch, naming the expected and the actual digest.
func TestLaunchImageMismatch(t *testing.T) {
	testutil.RequireRoot(t)
	dir, d := catImage(t)
	e := newEnv(t)
	wrong := "sha256:" + strings.Repeat("0", 64)
	e.opts.Image = dir + "@" + wrong
	e.opts.ImageCache = filepath.Join(e.dir, "cache")
	res, err := runbook.Launch(context.Background(), plan("T-image", runbook.Step{Command: "cat", Args: []string{"/etc/marker"}}), e.opts)
	if err == nil || res.ExitCode != runbook.ExitSetup {
		t.Fatalf("result %+v, err %v", res, err)
	}
	if !strings.Contains(res.Reason, "the image does not verify: image: manifest digest mismatch: expected "+wrong+", got "+d.String()) {
		t.Errorf("reason %q does not name the expected and the actual digest", res.Reason)
	}
	evs := e.events(t)
	if len(lifecycle(evs, audit.EventSandboxLaunched)) != 0 || len(lifecycle(evs, audit.EventStartupRefused)) != 1 {
		t.Errorf("lifecycle events: %+v", ofKind(evs, audit.KindLifecycle))
	}
}
