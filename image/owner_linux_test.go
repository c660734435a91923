package image

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

func ownedImageEntries() []ent {
	f := file("home/app/data", "d")
	f.uid, f.gid = 1234, 5678
	d := dir("home/app/")
	d.uid, d.gid = 1234, 1234
	s := symlink("home/app/link", "data")
	s.uid, s.gid = 7, 8
	r := file("etc/shadow", "secret")
	r.mode = 0o640
	r.gid = 42
	return []ent{dir("home/"), d, f, s, r}
}

func owner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid, st.Gid
}

func TestPrepareImageOwnership(t *testing.T) {
	testutil.RequireRoot(t)
	img := imageOf(t, layerOf(t, ownedImageEntries()...))
	dir := writeLayout(t, t.TempDir(), img)
	ref := Ref{Path: dir, Digest: digestOf(t, img)}
	cache := t.TempDir()
	for _, tc := range []struct {
		opts    Options
		variant string
		want    map[string][2]uint32
	}{
		{Options{}, "user", map[string][2]uint32{"home/app/data": {0, 0}, "home/app": {0, 0}, "home/app/link": {0, 0}}},
		{Options{Ownership: OwnershipImage}, "image-ids", map[string][2]uint32{
			"home/app/data": {1234, 5678}, "home/app": {1234, 1234}, "home/app/link": {7, 8}, "etc/shadow": {0, 42}, "etc": {0, 0}, ".": {0, 0},
		}},
		{Options{Ownership: OwnershipMapped, UIDMap: []IDRange{{0, 100000, 65536}}, GIDMap: []IDRange{{0, 200000, 65536}}}, "idmap-", map[string][2]uint32{
			"home/app/data": {101234, 205678}, "home/app": {101234, 201234}, "home/app/link": {100007, 200008}, "etc/shadow": {100000, 200042}, ".": {100000, 200000},
		}},
	} {
		p, err := Prepare(context.Background(), ref, cache, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if v := filepath.Base(filepath.Dir(p.Rootfs)); !strings.HasPrefix(v, tc.variant) {
			t.Fatalf("variant %s, want %s", v, tc.variant)
		}
		for rel, w := range tc.want {
			if u, g := owner(t, filepath.Join(p.Rootfs, rel)); u != w[0] || g != w[1] {
				t.Errorf("%s %s owned by %d:%d, want %d:%d", tc.variant, rel, u, g, w[0], w[1])
			}
		}
	}
	// An id outside the map refuses the unpack.
	_, err := Prepare(context.Background(), ref, t.TempDir(), Options{Ownership: OwnershipMapped, UIDMap: []IDRange{{0, 100000, 1000}}, GIDMap: []IDRange{{0, 100000, 65536}}})
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Reason != ReasonUnmappedID || ee.Name != "home/app/" {
		t.Fatalf("err = %v", err)
	}
}

const rootlessEnv = "AIRLOCK_IMAGE_ROOTLESS_DIR"

// TestPrepareRootless re-runs this test binary as uid 65534 to
// show that verification and unpacking need no privilege.
func TestPrepareRootless(t *testing.T) {
	testutil.RequireRoot(t)
	base, err := os.MkdirTemp("", "airlock-image-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	ro := dir("ro/")
	ro.mode = 0o555
	ents := append(ownedImageEntries(), ro, file("ro/f", "x"), file("bin/su", "s"))
	img := imageOf(t, layerOf(t, ents...), layerOf(t, file("home/app/.wh.data", "")))
	good := writeLayout(t, filepath.Join(base, "good"), img)
	bad := imageOf(t, layerOf(t, symlink("etc", "/etc"), file("etc/airlock-rootless-pwned", "x")))
	evil := writeLayout(t, filepath.Join(base, "evil"), bad)
	os.WriteFile(filepath.Join(base, "refs"), []byte(good+"@"+digestOf(t, img).String()+"\n"+evil+"@"+digestOf(t, bad).String()+"\n"), 0o644)
	for _, d := range []string{"cache", "cache2"} {
		os.Mkdir(filepath.Join(base, d), 0o700)
	}
	// The user owns its images and caches (go-containerregistry writes
	// blobs 0600).
	filepath.WalkDir(base, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, 65534, 65534)
		}
		return err
	})
	testutil.RunTestAsNobody(t, "TestRootlessHelper", rootlessEnv+"="+base, "XDG_CACHE_HOME="+filepath.Join(base, "cache"))
	// As root again: the tree belongs to 65534, whatever the image said.
	root := filepath.Join(base, "cache", "sha256", digestOf(t, img).Hex, "user", "rootfs")
	for _, rel := range []string{".", "home/app", "etc/shadow", "home/app/link", "ro"} {
		if u, g := owner(t, filepath.Join(root, rel)); u != 65534 || g != 65534 {
			t.Errorf("%s owned by %d:%d", rel, u, g)
		}
	}
	if _, err := os.Lstat("/etc/airlock-rootless-pwned"); !os.IsNotExist(err) {
		os.Remove("/etc/airlock-rootless-pwned")
		t.Fatal("rootless extraction wrote through a symlink")
	}
}

// TestRootlessHelper runs only under TestPrepareRootless, as uid 65534.
func TestRootlessHelper(t *testing.T) {
	base := os.Getenv(rootlessEnv)
	if base == "" {
		t.Skip("helper process of TestPrepareRootless")
	}
	if os.Geteuid() == 0 {
		t.Fatal("helper runs as root")
	}
	b, err := os.ReadFile(filepath.Join(base, "refs"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	good, err := ParseRef(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	// Default cache dir ($XDG_CACHE_HOME/airlock/images): use cache directly.
	cache := filepath.Join(base, "cache")
	p, err := Prepare(context.Background(), good, cache, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree := readTree(t, p.Rootfs)
	if _, ok := tree["home/app/data"]; ok || tree["home/app/link"] != "-> data" || tree["etc/shadow"] != "secret" || tree["ro/f"] != "x" {
		t.Fatalf("tree = %v", tree)
	}
	if fi, _ := os.Stat(filepath.Join(p.Rootfs, "ro")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("ro dir mode %v: user mode keeps the owner's rwx", fi.Mode())
	}
	// Reused, and reverifiable, rootless.
	if p2, err := Prepare(context.Background(), good, cache, Options{Reverify: true}); err != nil || !p2.Cached {
		t.Fatalf("reverify: %v", err)
	}
	// Image ownership needs root.
	if _, err := Prepare(context.Background(), good, cache, Options{Ownership: OwnershipImage}); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("ownership as non-root: %v", err)
	}
	// The user can delete their cache, read-only image directories included.
	cache2 := filepath.Join(base, "cache2")
	if _, err := Prepare(context.Background(), good, cache2, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(cache2, "sha256")); err != nil {
		t.Fatalf("user cannot delete the cache: %v", err)
	}
	// A write through a symlink is refused rootless too.
	evil, _ := ParseRef(lines[1])
	_, err = Prepare(context.Background(), evil, cache, Options{})
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Reason != ReasonParentSymlink {
		t.Fatalf("err = %v", err)
	}
}
