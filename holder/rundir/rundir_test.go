package rundir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWhy refuses a link, a file, a directory others may enter and one
// another user owns, and takes the caller's own private directory.
func TestWhy(t *testing.T) {
	uid := os.Geteuid()
	base := t.TempDir()
	own := filepath.Join(base, "own")
	open := filepath.Join(base, "open")
	file := filepath.Join(base, "file")
	link := filepath.Join(base, "link")
	os.Mkdir(own, 0o700)
	os.Mkdir(open, 0o755)
	os.WriteFile(file, nil, 0o600)
	os.Symlink(own, link)
	for _, c := range []struct {
		dir  string
		uid  int
		want string
	}{
		{own, uid, ""},
		{own, uid + 1, "owned by another user"},
		{open, uid, "may be entered by other users"},
		{file, uid, "is not a directory"},
		{link, uid, "is a symbolic link"},
		{filepath.Join(base, "none"), uid, "no such file"},
	} {
		got := Why(c.dir, c.uid)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("Why(%s, %d) = %q, want %q", c.dir, c.uid, got, c.want)
		}
	}
}

// TestPath takes XDG_RUNTIME_DIR only when it is absolute and private.
func TestPath(t *testing.T) {
	uid := os.Geteuid()
	fallback := "/tmp/airlock-" + strconv.Itoa(uid)
	own := t.TempDir()
	os.Chmod(own, 0o700)
	open := t.TempDir()
	os.Chmod(open, 0o755)
	for xdg, want := range map[string]string{
		own + "/":        filepath.Join(own, "airlock"),
		open:             fallback,
		"relative/place": fallback,
		"":               fallback,
	} {
		t.Setenv("XDG_RUNTIME_DIR", xdg)
		if got := Path(uid); got != want {
			t.Errorf("XDG_RUNTIME_DIR=%q: Path = %q, want %q", xdg, got, want)
		}
	}
}
