package hostpath

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestMain runs a test binary re-run by RunTestAsNobody.
func TestMain(m *testing.M) { os.Exit(m.Run()) }

// runTarget returns a directory under /run for a test to reach through a
// link or a bind: a fresh one as root, /run itself otherwise.
func runTarget(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return "/run"
	}
	dir, err := os.MkdirTemp("/run", "airlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Mkdir(dir+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// varDir makes a directory outside /tmp (which views may not name).
func varDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "airlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newChecker(t *testing.T) *Checker {
	t.Helper()
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestSymlinkedComponent reaches a directory under /run through a
// symbolic link in a path component, at its last component, and past it
// to a path that does not exist: each is refused by its real path.
func TestSymlinkedComponent(t *testing.T) {
	testSymlinkedComponent(t)
}

func testSymlinkedComponent(t *testing.T) {
	target := runTarget(t)
	link := filepath.Join(varDir(t), "lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	c := newChecker(t)
	real := "its real path is " + target
	wantRefused(t, c.Check("readOnly", link), real)
	wantRefused(t, c.Check("readWrite", link+"/missing/deeper"), real+"/missing/deeper")
	wantRefused(t, c.CheckBind(link), real)
	if os.Geteuid() == 0 {
		wantRefused(t, c.Check("readOnly", link+"/sub"), real+"/sub")
	}
	for _, p := range []string{"/usr", "/etc", "/bin", "/lib", "/usr/share", "/var/tmp", "/var/does-not-exist"} {
		if err := c.Check("readOnly", p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if fi, err := os.Lstat("/var/lock"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		wantRefused(t, c.Check("readOnly", "/var/lock"), "its real path is /run/lock")
	}
}

// TestSymlinkedComponentRootless is TestSymlinkedComponent as uid 65534.
func TestSymlinkedComponentRootless(t *testing.T) {
	testutil.RunTestAsNobody(t, "TestSymlinkedComponent")
}

// TestOpenedIsChecked checks the tree a descriptor holds, not the path:
// a link swapped after the open changes nothing.
func TestOpenedIsChecked(t *testing.T) {
	target := runTarget(t)
	dir := varDir(t)
	link := filepath.Join(dir, "x")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(link, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(link, 0o755); err != nil { // now a harmless directory
		t.Fatal(err)
	}
	c := newChecker(t)
	wantRefused(t, c.CheckOpened("readOnly", link, fd, true), "its real path is "+target)
	if err := c.Check("readOnly", link); err != nil {
		t.Errorf("the harmless directory: %v", err)
	}
}

// TestBindMounts shows a /run directory elsewhere with a bind mount, in a
// private mount namespace of the test's own thread: the bind, a tree with
// such a bind below it, and a tree with a proc filesystem below it are
// refused by their place among the mounts, whatever their words.
func TestBindMounts(t *testing.T) {
	testutil.RequireRoot(t)
	target := runTarget(t)
	dir := varDir(t)
	for _, d := range []string{"bm", "tree/inner", "procs/p", "fine/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread ends with the goroutine, still locked: its mount
		// namespace goes with it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Errorf("make / private: %v", err)
			return
		}
		for _, m := range []struct{ src, dst, fstype string }{
			{target, dir + "/bm", ""}, {target, dir + "/tree/inner", ""}, {"proc", dir + "/procs/p", "proc"}, {"/usr", dir + "/fine/sub", ""},
		} {
			flags := uintptr(unix.MS_BIND)
			if m.fstype != "" {
				flags = 0
			}
			if err := unix.Mount(m.src, m.dst, m.fstype, flags, ""); err != nil {
				t.Errorf("mount %s at %s: %v", m.src, m.dst, err)
				return
			}
		}
		c := newChecker(t)
		wantRefused(t, c.Check("readOnly", dir+"/bm"), "it shows the host's /run")
		wantRefused(t, c.CheckBind(dir+"/bm"), "it shows the host's /run")
		wantRefused(t, c.Check("readOnly", dir+"/tree"), "the mount at "+dir+"/tree/inner below it: it shows the host's /run")
		wantRefused(t, c.Check("readOnly", dir+"/procs"), "it is a proc filesystem")
		if err := c.Check("readOnly", dir+"/fine"); err != nil {
			t.Errorf("a tree with /usr bound below it: %v", err)
		}
		if err := unix.Mount("/", dir+"/bm", "", unix.MS_BIND, ""); err != nil {
			t.Errorf("bind /: %v", err)
			return
		}
		wantRefused(t, newChecker(t).Check("readOnly", dir+"/bm"), "refusing to bind it: it ")
	}()
	<-done
}
