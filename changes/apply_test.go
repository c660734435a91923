package changes

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// node is one entry of a test tree: a file (content, exec), a link
// (link), a directory (dir) or a fifo (fifo).
type node struct {
	content string
	exec    bool
	link    string
	dir     bool
	fifo    bool
}

func file(s string) node     { return node{content: s} }
func execFile(s string) node { return node{content: s, exec: true} }
func link(to string) node    { return node{link: to} }

// writeTree makes a directory holding spec, parents first.
func writeTree(t testing.TB, spec map[string]node) string {
	t.Helper()
	dir := t.TempDir()
	names := make([]string, 0, len(spec))
	for p := range spec {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		n := spec[p]
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case n.dir:
			err = os.MkdirAll(full, 0o755)
		case n.fifo:
			err = syscall.Mkfifo(full, 0o644)
		case n.link != "":
			err = os.Symlink(n.link, full)
		default:
			mode := os.FileMode(0o644)
			if n.exec {
				mode = 0o755
			}
			if err = os.WriteFile(full, []byte(n.content), mode); err == nil {
				err = os.Chmod(full, mode)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// gitCmd runs git in dir with no user or system configuration and no
// repository above dir.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir), "LC_ALL=C"}
	return cmd
}

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git (.ci/run installs it)")
	}
}

// checkApplies applies p with real git apply (--check first) to a copy
// of orig and checks that the result is mod, byte for byte, links and
// executable bits included, leaving out the paths p says it omits.
func checkApplies(t testing.TB, orig, mod string, p Patch) {
	t.Helper()
	requireGit(t)
	work := filepath.Join(t.TempDir(), "work")
	if out, err := exec.Command("cp", "-a", orig, work).CombinedOutput(); err != nil {
		t.Fatalf("copy the original: %v: %s", err, out)
	}
	patch := filepath.Join(filepath.Dir(work), "changes.patch")
	if err := os.WriteFile(patch, p.Diff, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(p.Diff) > 0 {
		// From the parent, with --directory: a .git the tree holds (which
		// the patch never touches) is not taken for a repository.
		for _, args := range [][]string{{"apply", "--check", "--directory=work", patch}, {"apply", "--directory=work", patch}} {
			if out, err := gitCmd(filepath.Dir(work), args...).CombinedOutput(); err != nil {
				t.Fatalf("git %s: %v\n%s\npatch:\n%s", strings.Join(args, " "), err, out, p.Diff)
			}
		}
	}
	var skip []string
	for _, f := range p.Files {
		if f.Omitted != "" {
			skip = append(skip, f.Path)
			if f.OldPath != "" {
				skip = append(skip, f.OldPath)
			}
		}
	}
	got, want := describeTree(t, work, skip), describeTree(t, mod, skip)
	if !mapsEqual(got, want) {
		t.Fatalf("git apply of the patch gives\n%s\nwant\n%s\npatch:\n%s", dump(got), dump(want), p.Diff)
	}
}

// describeTree lists every file and link under dir (directories are
// implied, as git sees them), leaving out skip and what is beneath.
func describeTree(t testing.TB, dir string, skip []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return out // git apply removed it, emptied, with --directory
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		for _, s := range skip {
			if rel == s || strings.HasPrefix(rel, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + l
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file x=%v %q", info.Mode()&0o100 != 0, b)
		default:
			out[rel] = "other " + info.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func dump(m map[string]string) string {
	var b bytes.Buffer
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		if len(v) > 200 {
			v = v[:200] + "..."
		}
		fmt.Fprintf(&b, "  %q: %s\n", k, v)
	}
	return b.String()
}

// diffDirs compares two host directories.
func diffDirs(t testing.TB, orig, mod string, lim Limits) Patch {
	t.Helper()
	p, err := Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), lim)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return p
}
