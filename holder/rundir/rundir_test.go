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
		{own, uid + 1, "is uid " + strconv.Itoa(uid) + "'s, not yours: refusing it (set XDG_RUNTIME_DIR"},
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

// TestPath takes XDG_RUNTIME_DIR only when it is absolute and private,
// then /tmp/airlock-UID unless another user made it first (it is then
// the user's own state directory's, and stays so).
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

	// /tmp/airlock-UID made first by another user (this one, for a uid
	// no one has).
	other := 1<<31 - 7
	taken := Tmp(other)
	if err := os.Mkdir(taken, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(taken)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	stateRun := filepath.Join(state, "airlock", "run")
	if got := Path(other); got != stateRun || Own() != stateRun {
		t.Errorf("with %s taken: Path = %q, want %q", taken, got, stateRun)
	}
	if why := Taken(other); !strings.Contains(why, "not yours") {
		t.Errorf("Taken = %q", why)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", state)
	if got, want := Path(other), filepath.Join(state, ".local/state/airlock/run"); got != want {
		t.Errorf("with HOME only: Path = %q, want %q", got, want)
	}
	t.Setenv("HOME", "")
	if got := Path(other); got != taken {
		t.Errorf("with no state directory: Path = %q, want %q (for Why to refuse)", got, taken)
	}
	os.Remove(taken)
	t.Setenv("XDG_STATE_HOME", state)
	if got := Path(other); got != taken || Taken(other) != "" {
		t.Errorf("with %s free: Path = %q", taken, got)
	}
	if err := os.MkdirAll(stateRun, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := Path(other); got != stateRun {
		t.Errorf("once the state directory's is made: Path = %q, want %q", got, stateRun)
	}
}

// TestPathTMPDIR takes, as on macOS, TMPDIR after XDG_RUNTIME_DIR, only
// when it is absolute and private.
func TestPathTMPDIR(t *testing.T) {
	defer func(v []string) { privateVars = v }(privateVars)
	privateVars = []string{"XDG_RUNTIME_DIR", "TMPDIR"}
	uid := os.Geteuid()
	own, open, xdg := t.TempDir(), t.TempDir(), t.TempDir()
	os.Chmod(own, 0o700)
	os.Chmod(open, 0o755)
	os.Chmod(xdg, 0o700)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	for _, c := range []struct{ xdg, tmp, want string }{
		{"", own, filepath.Join(own, "airlock")},
		{xdg, own, filepath.Join(xdg, "airlock")},
		{"", open, Tmp(uid)},
		{"", "relative", Tmp(uid)},
	} {
		t.Setenv("XDG_RUNTIME_DIR", c.xdg)
		t.Setenv("TMPDIR", c.tmp)
		if got := Path(uid); got != c.want {
			t.Errorf("XDG_RUNTIME_DIR=%q TMPDIR=%q: Path = %q, want %q", c.xdg, c.tmp, got, c.want)
		}
	}
}
