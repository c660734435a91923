package gitignore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv is an environment in which git reads no configuration but the
// repository's: no core.excludesFile of the user running the tests.
func gitEnv(t testing.TB) []string {
	home := t.TempDir()
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
}

// needGit skips the test where git is not installed.
func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// gitBefore252 reports whether the installed git is older than 2.52,
// whose match_pathname handed wildmatch a pattern without its literal
// prefix: "x/a**/b" was "**/b" to it, and matched "x/ab" and "x/a/c/b"
// (git 1940a02dc1 fixed it; airlock follows the fix).
func gitBefore252(t testing.TB) bool {
	t.Helper()
	out, err := exec.Command("git", "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(out), "git version %d.%d", &major, &minor); err != nil {
		t.Fatalf("git version: %q: %v", out, err)
	}
	return major < 2 || major == 2 && minor < 52
}

// oldGitDiffers reports whether a git older than 2.52 reads the ignore
// file's line differently from git 2.52: a pattern with a slash whose
// literal start, not ending in one, is followed by "**".
func oldGitDiffers(line string) bool {
	p := strings.TrimSuffix(strings.TrimPrefix(trimTrailingSpaces(strings.TrimSuffix(line, "\r")), "!"), "/")
	if !strings.Contains(p, "/") {
		return false
	}
	p = strings.TrimPrefix(p, "/")
	k := strings.IndexAny(p, "*?[\\")
	return k > 0 && p[k-1] != '/' && strings.HasPrefix(p[k:], "**")
}

// gitInit makes an empty repository in dir, with no info/exclude.
func gitInit(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = gitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(dir, ".git", "info", "exclude")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

// gitIgnored asks git check-ignore which of paths (relative to the
// repository dir) its rules exclude.
func gitIgnored(t *testing.T, dir string, paths []string) map[string]bool {
	t.Helper()
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	cmd := exec.Command("git", "-C", dir, "check-ignore", "--no-index", "--stdin", "-z")
	cmd.Env = gitEnv(t)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: none ignored
		t.Fatalf("git check-ignore: %v\n%s", err, stderr.Bytes())
	}
	got := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			got[p] = true
		}
	}
	return got
}

// matcherFor reads the ignore files of the tree at dir as Diff does: every
// regular .gitignore file, then .git/info/exclude.
func matcherFor(t *testing.T, dir string) *Matcher {
	t.Helper()
	m := NewMatcher(1 << 40)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && d.IsDir() {
			return fs.SkipDir
		}
		if d.Name() != ".gitignore" || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(p))
		if rel == "." {
			rel = ""
		}
		m.Add(filepath.ToSlash(rel), ParseFile(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude")); err == nil {
		m.AddLast(ParseFile(b))
	}
	return m
}

// treePaths lists every path of the tree at dir but .git's, and which
// are directories.
func treePaths(t *testing.T, dir string) (paths []string, isDir map[string]bool) {
	t.Helper()
	isDir = map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if d.Name() == ".git" && d.IsDir() {
			return fs.SkipDir
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		paths = append(paths, rel)
		isDir[rel] = d.IsDir()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths, isDir
}

// compareWithGit checks that the Matcher of each tree, at roots (paths
// in the repository dir, "" for its top), excludes exactly what git
// check-ignore does, asked once for them all, and returns how many paths
// git excluded.
func compareWithGit(t *testing.T, dir string, roots []string, describe func(root string) string) int {
	t.Helper()
	var all []string
	for _, root := range roots {
		paths, _ := treePaths(t, filepath.Join(dir, root))
		for _, p := range paths {
			all = append(all, path.Join(root, p))
		}
	}
	want := gitIgnored(t, dir, all)
	for _, root := range roots {
		paths, isDir := treePaths(t, filepath.Join(dir, root))
		m := matcherFor(t, filepath.Join(dir, root))
		for _, p := range paths {
			got, err := m.Excluded(p, isDir[p])
			if err != nil {
				t.Fatal(err)
			}
			if w := want[path.Join(root, p)]; got != w {
				t.Errorf("%q (dir %v): excluded %v, git says %v\n%s", p, isDir[p], got, w, describe(root))
			}
		}
	}
	return len(want)
}

// writeTree makes the files (a trailing "/" makes a directory) and the
// ignore files given, path to content, in a new repository.
func writeTree(t *testing.T, files []string, ignores map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitInit(t, dir)
	writeFiles(t, dir, files, ignores)
	return dir
}

// writeFiles makes the files and ignore files of writeTree in dir.
func writeFiles(t *testing.T, dir string, files []string, ignores map[string]string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(f, "/")))
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range ignores {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
