package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlock-sandbox/airlock/image"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// rootfsFiles are the files a tiny image root holds: what the test binary
// needs to run (its ELF interpreter and libraries, when it is dynamically
// linked; the binary itself comes in through BindSelf), a marker, a
// top-level symbolic link and file, and a /proc the sandbox must cover.
// Keys are paths inside the root; values are host files to copy, or
// "=content" for a file with that content.
func rootfsFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{
		"etc/marker":      "=from the image\n",
		"hello.txt":       "=top-level file\n",
		"usr/bin/.keep":   "=",
		"proc/not-a-proc": "=the image's own /proc, which must stay hidden\n",
	}
	// /proc/self/exe, not the path: a rootless run's binary may sit in a
	// directory it can execute from but not open by name.
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		// Dynamically linked: its interpreter and libraries come along.
		b, err := io.ReadAll(p.Open())
		if err != nil {
			t.Fatal(err)
		}
		interp := strings.TrimRight(string(b), "\x00")
		files[strings.TrimPrefix(interp, "/")] = interp
		libs, err := f.ImportedLibraries()
		if err != nil {
			t.Fatal(err)
		}
		for _, lib := range libs {
			found := false
			for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
				if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
					files[strings.TrimPrefix(filepath.Join(d, lib), "/")] = filepath.Join(d, lib)
					found = true
					break
				}
			}
			if !found {
				t.Skipf("library %s of the test binary not found", lib)
			}
		}
	}
	return files
}

// writeRootfs makes the tiny root as a directory.
func writeRootfs(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for in, src := range files {
		dst := filepath.Join(dir, in)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		var b []byte
		if c, ok := strings.CutPrefix(src, "="); ok {
			b = []byte(c)
		} else {
			var err error
			if b, err = os.ReadFile(src); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
}

// rootProbe is what payloadRoot reports from inside an image root.
type rootProbe struct {
	Marker     string   `json:"marker"`
	Entries    []string `json:"entries"`
	HostShell  bool     `json:"hostShell"`
	BinLink    string   `json:"binLink"`
	WriteErr   string   `json:"writeErr"`
	ProcIsProc bool     `json:"procIsProc"`
}

// payloadRoot looks at the root it runs in.
func payloadRoot([]string) int {
	var r rootProbe
	b, _ := os.ReadFile("/etc/marker")
	r.Marker = string(b)
	ents, _ := os.ReadDir("/")
	for _, e := range ents {
		r.Entries = append(r.Entries, e.Name())
	}
	_, err := os.Stat("/bin/sh")
	r.HostShell = err == nil
	r.BinLink, _ = os.Readlink("/bin")
	if err := os.WriteFile("/etc/marker", []byte("changed"), 0); err != nil {
		r.WriteErr = errnoString(err)
	}
	_, err = os.Stat("/proc/self/status")
	r.ProcIsProc = err == nil
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

func runInRoot(t *testing.T, root string) rootProbe {
	t.Helper()
	cfg := payloadConfig("root")
	cfg.Env = []string{payloadEnv + "=root"}
	cfg.Root = root
	cfg.ReadOnly = nil
	res, out, errOut := run(t, cfg)
	if res.ExitCode != 0 {
		t.Fatalf("result %+v, stdout %q, stderr %q", res, out, errOut)
	}
	var r rootProbe
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("payload output %q: %v", out, err)
	}
	if !strings.Contains(res.Receipt["filesystem"], "image root") {
		t.Errorf("receipt filesystem %q does not name the image root", res.Receipt["filesystem"])
	}
	return r
}

func checkRootProbe(t *testing.T, r rootProbe) {
	t.Helper()
	if r.Marker != "from the image\n" {
		t.Errorf("/etc/marker inside is %q, want the image's", r.Marker)
	}
	if r.HostShell {
		t.Error("/bin/sh of the host is visible inside an image root")
	}
	if r.BinLink != "usr/bin" {
		t.Errorf("/bin links to %q, want the image's usr/bin", r.BinLink)
	}
	if r.WriteErr != "read-only file system" && r.WriteErr != "permission denied" {
		t.Errorf("a write to the image's /etc/marker gave %q, want refused", r.WriteErr)
	}
	if !r.ProcIsProc {
		t.Error("/proc inside is not the sandbox's proc")
	}
	for _, want := range []string{"etc", "hello.txt", "usr", "bin", "proc", "tmp", "workspace", "findings"} {
		if !containsString(r.Entries, want) {
			t.Errorf("/ inside lacks %s: %q", want, r.Entries)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRootDirectory runs the test binary in a tiny root kept in a
// directory only root may enter (as an image cache is).
func TestRootDirectory(t *testing.T) {
	testutil.RequireRoot(t)
	private := t.TempDir()
	os.Chmod(private, 0o700)
	root := filepath.Join(private, "rootfs")
	writeRootfs(t, root, rootfsFiles(t))
	// An image's homes are not shown: the sandbox shows no home at all.
	for _, d := range []string{"root", "home/user"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := runInRoot(t, root)
	checkRootProbe(t, r)
	if containsString(r.Entries, "root") || containsString(r.Entries, "home") {
		t.Errorf("the image's homes are shown inside: %q", r.Entries)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/marker")); string(b) != "from the image\n" {
		t.Errorf("the image root on the host changed: %q", b)
	}
}

// TestRootImage unpacks a pinned OCI layout with the image package and
// runs in its rootfs.
func TestRootImage(t *testing.T) {
	testutil.RequireRoot(t)
	files := rootfsFiles(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for in, src := range files {
		for d := filepath.Dir(in); d != "."; d = filepath.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755})
			}
		}
		var b []byte
		if c, ok := strings.CutPrefix(src, "="); ok {
			b = []byte(c)
		} else {
			b, _ = os.ReadFile(src)
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: in, Mode: 0o755, Size: int64(len(b))})
		tw.Write(b)
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin", Linkname: "usr/bin", Mode: 0o777})
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	digest := testutil.WriteLayout(t, filepath.Join(dir, "oci"), img)
	ref, err := image.ParseRef(filepath.Join(dir, "oci") + "@" + digest.String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := image.Prepare(context.Background(), ref, filepath.Join(dir, "cache"), image.Options{})
	if err != nil {
		t.Fatalf("image.Prepare: %v", err)
	}
	checkRootProbe(t, runInRoot(t, p.Rootfs))
}

func TestRootRefused(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Root: "/"}, "refusing the host's own root"},
		{Config{Root: "relative/dir"}, "want a clean absolute path"},
		{Config{Root: "/proc/1/root"}, "kernel interfaces"},
		{Config{Root: "/srv/img", ReadOnly: []string{"/usr"}}, "set one of them"},
	} {
		tc.cfg.Path = "/bin/true"
		tc.cfg.Caps = testCaps()
		_, err := normalize(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Root %q ReadOnly %q: %v, want %q", tc.cfg.Root, tc.cfg.ReadOnly, err, tc.want)
		}
	}
	if _, err := normalize(Config{Path: "/bin/true", Caps: testCaps(), Root: "/srv/img"}); err != nil {
		t.Errorf("a valid Root: %v", err)
	}
}

// errnoString is err's errno text, or err's own.
func errnoString(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
