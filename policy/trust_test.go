//go:build unix

package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

const goodPolicy = `{"toolScopes": {"t": {}}}`

// TestLoadRefusesUntrusted checks the rule of docs/policy.md, "Where the
// policy comes from": a policy is read only from a regular file that
// nobody but the caller or root could have written or put there. Each
// refusal names the file and the property; a FIFO is refused without
// blocking.
func TestLoadRefusesUntrusted(t *testing.T) {
	root := os.Geteuid() == 0
	for _, c := range []struct {
		name string
		root bool // needs root (chown to another user)
		// setup makes the case under base (mode 0755) and returns the
		// path to load.
		setup func(t *testing.T, base string) string
		want  string // "" for a policy that loads
	}{
		{"good", false, func(t *testing.T, base string) string {
			return write(t, base, "p.json", 0o644)
		}, ""},
		{"read-only for everyone", false, func(t *testing.T, base string) string {
			return write(t, base, "p.json", 0o444)
		}, ""},
		{"group-writable file", false, func(t *testing.T, base string) string {
			return write(t, base, "p.json", 0o664)
		}, "is group- or world-writable (mode 0664)"},
		{"world-writable file", false, func(t *testing.T, base string) string {
			return write(t, base, "p.json", 0o646)
		}, "is group- or world-writable (mode 0646)"},
		{"group-writable directory", false, func(t *testing.T, base string) string {
			return write(t, mkdir(t, base, "d", 0o775), "p.json", 0o644)
		}, "its directory " + "BASE/d is group- or world-writable (mode 0775)"},
		{"sticky world-writable directory", false, func(t *testing.T, base string) string {
			return write(t, mkdir(t, base, "d", 0o1777), "p.json", 0o644)
		}, "its directory BASE/d is group- or world-writable (mode 0777)"},
		{"sticky directory above", false, func(t *testing.T, base string) string {
			return write(t, mkdir(t, mkdir(t, base, "tmp", 0o1777), "mine", 0o755), "p.json", 0o644)
		}, ""},
		{"writable directory above", false, func(t *testing.T, base string) string {
			return write(t, mkdir(t, mkdir(t, base, "shared", 0o777), "mine", 0o755), "p.json", 0o644)
		}, "the directory BASE/shared above it is group- or world-writable (mode 0777) and not sticky"},
		{"link in a shared directory", false, func(t *testing.T, base string) string {
			good := write(t, base, "p.json", 0o644)
			link := filepath.Join(mkdir(t, base, "shared", 0o777), "link.json")
			symlink(t, good, link)
			return link
		}, "the symbolic link BASE/shared/link.json on the way: the directory BASE/shared above it is group- or world-writable (mode 0777) and not sticky"},
		{"link in a sticky directory, to a good file", false, func(t *testing.T, base string) string {
			good := write(t, base, "p.json", 0o644)
			link := filepath.Join(mkdir(t, base, "tmp", 0o1777), "link.json")
			symlink(t, good, link)
			return link
		}, ""},
		{"links through a shared directory", false, func(t *testing.T, base string) string {
			write(t, mkdir(t, base, "etc", 0o755), "p.json", 0o644)
			shared := mkdir(t, base, "shared", 0o777)
			symlink(t, filepath.Join(base, "etc"), filepath.Join(shared, "to-etc"))
			symlink(t, filepath.Join(shared, "to-etc"), filepath.Join(base, "conf"))
			return filepath.Join(base, "conf", "p.json")
		}, "the symbolic link BASE/shared/to-etc on the way"},
		{"relative links", false, func(t *testing.T, base string) string {
			write(t, mkdir(t, base, "etc", 0o755), "p.json", 0o644)
			symlink(t, "etc", filepath.Join(base, "conf"))
			symlink(t, "conf/./p.json", filepath.Join(base, "link.json"))
			return filepath.Join(base, "link.json")
		}, ""},
		{"link to a file in a shared directory", false, func(t *testing.T, base string) string {
			bad := write(t, mkdir(t, base, "shared", 0o777), "p.json", 0o644)
			link := filepath.Join(base, "link.json")
			symlink(t, bad, link)
			return link
		}, "its directory BASE/shared is group- or world-writable"},
		{"FIFO", false, func(t *testing.T, base string) string {
			p := filepath.Join(base, "fifo.json")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, "BASE/fifo.json is a named pipe (FIFO), not a regular file"},
		{"directory", false, func(t *testing.T, base string) string {
			return mkdir(t, base, "dir.json", 0o755)
		}, "BASE/dir.json is a directory, not a regular file"},
		{"device", false, func(*testing.T, string) string { return "/dev/null" },
			"/dev/null is a character device, not a regular file"},
		{"dangling link", false, func(t *testing.T, base string) string {
			link := filepath.Join(base, "p.json")
			symlink(t, "nowhere.json", link)
			return link
		}, "no such file or directory"},
		{"file of another user", true, func(t *testing.T, base string) string {
			p := write(t, base, "p.json", 0o644)
			chown(t, p)
			return p
		}, "it is owned by uid 4242, not by you (uid 0) or root"},
		{"directory of another user", true, func(t *testing.T, base string) string {
			d := mkdir(t, base, "theirs", 0o755)
			p := write(t, d, "p.json", 0o644)
			chown(t, d)
			return p
		}, "the directory BASE/theirs is owned by uid 4242, not by you (uid 0) or root"},
		{"link of another user", true, func(t *testing.T, base string) string {
			good := write(t, base, "p.json", 0o644)
			link := filepath.Join(mkdir(t, base, "tmp", 0o1777), "link.json")
			symlink(t, good, link)
			if err := os.Lchown(link, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			return link
		}, "the symbolic link BASE/tmp/link.json on the way is owned by uid 4242"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && !root {
				t.Skip("needs root to give a file to another user")
			}
			base := t.TempDir()
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			path := c.setup(t, base)
			done := make(chan struct{})
			var (
				l   *policy.Loaded
				err error
			)
			go func() { l, err = policy.Load(path); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load blocked")
			}
			want := strings.ReplaceAll(c.want, "BASE", base)
			switch {
			case want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case want == "":
				if real, _ := filepath.EvalSymlinks(path); l.Path != real {
					t.Errorf("Path %q, want %q", l.Path, real)
				}
			case err == nil:
				t.Fatalf("loaded; want an error with %q", want)
			case !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "policy: ") || !strings.Contains(err.Error(), path):
				t.Fatalf("error %q\nwant it to name %s and say %q", err, path, want)
			}
		})
	}
}

// TestOutside checks that a policy inside a run's workspace or findings
// directory is refused, however either is named.
func TestOutside(t *testing.T) {
	base := t.TempDir()
	ws := mkdir(t, base, "ws", 0o755)
	l, err := policy.Load(write(t, ws, "p.json", 0o644))
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	symlink(t, ws, link)
	for _, dir := range []string{ws, link, base, filepath.Join(ws, "..")} {
		if err := l.Outside("--findings", dir); err == nil || !strings.Contains(err.Error(), "is inside the run's --findings directory") {
			t.Errorf("Outside(%q): %v", dir, err)
		}
	}
	for _, dir := range []string{mkdir(t, base, "other", 0o755), filepath.Join(base, "not-yet"), ""} {
		if err := l.Outside("--findings", dir); err != nil {
			t.Errorf("Outside(%q): %v", dir, err)
		}
	}
	if err := policy.Default().Outside("--workspace", "/"); err != nil {
		t.Errorf("the embedded default: %v", err)
	}
}

func write(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(goodPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func mkdir(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	m := mode.Perm()
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string) {
	t.Helper()
	if err := os.Chown(p, 4242, 4242); err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefusesUntrustedRootless runs TestLoadRefusesUntrusted as uid
// 65534: the rule holds for an unprivileged caller too (root's files are
// then still trusted, another user's not).
func TestLoadRefusesUntrustedRootless(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RunTestAsNobody(t, "TestLoadRefusesUntrusted")
}
