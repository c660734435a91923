package gitignore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzAgainstGit checks one line of a .gitignore against one path (a
// directory when dir is set) as git check-ignore decides them: the
// Matcher must agree, within its budget of steps.
func FuzzAgainstGit(f *testing.F) {
	for _, s := range []struct {
		line, path string
		dir        bool
	}{
		{"*.o", "d/x.o", false}, {"!keep", "keep", false}, {"out/", "out", true}, {"out/", "out", false},
		{"/top", "d/top", false}, {"a/**/b", "a/x/y/b", false}, {"**/logs", "logs", true}, {"c/**", "c/g/h", false},
		{"x/a**/b", "x/a/c/b", false}, {"[!a]1", "b1", false}, {"[[:digit:]]x", "7x", false}, {"[]x]5", "]5", false},
		{"[a-]6", "-6", false}, {"\\#h", "#h", false}, {"sp\\ ", "sp ", false}, {"trail   ", "trail", false},
		{"[ab", "[ab", false}, {"[[:nope:]]", "n", false}, {"x\\", "x\\", false}, {"**\\/b", "a/b", false},
		{"*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false}, {"d/*", "d/e/f", false}, {"é*", "é1", false},
		{"[[:alpha:]-z]", "-", false}, {"[\\]]", "]", false}, {"a[", "a[", false}, {"?", "/", false},
	} {
		f.Add(s.line, s.path, s.dir)
	}
	needGit(f)
	old := gitBefore252(f)
	dir := f.TempDir()
	gitInit(f, dir)
	f.Fuzz(func(t *testing.T, line, p string, isDir bool) {
		if strings.ContainsAny(line, "\n\x00") || len(line) > 200 || len(p) > 200 || !cleanPath(p) || old && oldGitDiffers(line) {
			t.Skip()
		}
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if isDir {
			if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
				t.Skip() // a name this file system refuses
			}
			defer os.RemoveAll(filepath.Join(dir, strings.SplitN(p, "/", 2)[0]))
		}
		want := gitIgnored(t, dir, []string{p})[p]
		m := NewMatcher(1 << 20)
		m.Add("", ParseFile([]byte(line+"\n")))
		got, err := m.Excluded(p, isDir)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%q against %q (dir %v): excluded %v, git says %v", line, p, isDir, got, want)
		}
	})
}

// cleanPath reports whether p is a path git takes as it is: relative,
// clean, with no element ".git".
func cleanPath(p string) bool {
	if p == "" || strings.ContainsAny(p, "\x00\n") {
		return false
	}
	for _, e := range strings.Split(p, "/") {
		if e == "" || e == "." || e == ".." || strings.EqualFold(e, ".git") {
			return false
		}
	}
	return true
}
