package changes

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
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
	for _, p := range slices.Sorted(maps.Keys(spec)) {
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

// checkApplies applies p with real git apply (--check first) to a copy
// of orig and checks that the result is mod, byte for byte, links and
// executable bits included, leaving out the paths p says it omits and
// those excluded names (paths the rules left out, and what is beneath).
func checkApplies(t testing.TB, orig, mod string, p Patch, excluded ...string) {
	t.Helper()
	testutil.RequireCommands(t, "git")
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
		// With core.protectHFS too (on by default on macOS only): the
		// patch must apply whichever git the reviewer runs.
		for _, args := range [][]string{{"-c", "core.protectHFS=true", "apply", "--check", "--directory=work", patch},
			{"-c", "core.protectHFS=true", "apply", "--directory=work", patch}} {
			if out, err := testutil.GitCmd(filepath.Dir(work), args...).CombinedOutput(); err != nil {
				t.Fatalf("git %s: %v\n%s\npatch:\n%s", strings.Join(args, " "), err, out, p.Diff)
			}
		}
	}
	skip := slices.Clone(excluded)
	for _, f := range p.Files {
		if f.Omitted != "" {
			skip = append(skip, f.Path)
			if f.OldPath != "" {
				skip = append(skip, f.OldPath)
			}
		}
	}
	got, err := testutil.DescribeTree(work, skip)
	if err != nil {
		t.Fatal(err)
	}
	want, err := testutil.DescribeTree(mod, skip)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("git apply of the patch gives\n%s\nwant\n%s\npatch:\n%s", dump(got), dump(want), p.Diff)
	}
}

func dump(m map[string]string) string {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(m)) {
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
	p, err := Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), Options{Limits: lim})
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return p
}
