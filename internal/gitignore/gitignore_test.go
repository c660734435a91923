package gitignore

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSyntax checks git's documented syntax, case by case: each case's
// expected exclusions are stated, and git check-ignore must agree with
// them too.
func TestSyntax(t *testing.T) {
	needGit(t)
	old := gitBefore252(t)
	for _, tc := range []struct {
		name     string
		ignores  map[string]string
		files    []string
		excluded []string
	}{
		{"a name at any depth", map[string]string{".gitignore": "x.o\n"},
			[]string{"x.o", "d/x.o", "d/e/x.o", "x.oo"}, []string{"x.o", "d/x.o", "d/e/x.o"}},
		{"negation", map[string]string{".gitignore": "*.log\n!keep.log\n"},
			[]string{"a.log", "keep.log", "d/keep.log", "d/b.log"}, []string{"a.log", "d/b.log"}},
		{"no negation beneath an excluded directory", map[string]string{".gitignore": "build/\n!build/keep\n"},
			[]string{"build/keep", "build/x"}, []string{"build", "build/keep", "build/x"}},
		{"directories only", map[string]string{".gitignore": "out/\n"},
			[]string{"out/f", "d/out", "e/out/g"}, []string{"out", "out/f", "e/out", "e/out/g"}},
		{"anchored", map[string]string{".gitignore": "/top\nmid/x\n"},
			[]string{"top", "d/top", "mid/x", "d/mid/x"}, []string{"top", "mid/x"}},
		{"double star", map[string]string{".gitignore": "**/logs\na/**/b\nc/**\n"},
			[]string{"logs", "d/e/logs", "a/b", "a/x/y/b", "c/f", "c/g/h", "cc/f"},
			[]string{"logs", "d/e/logs", "a/b", "a/x/y/b", "c/f", "c/g", "c/g/h"}},
		{"a double star inside a name is a star", map[string]string{".gitignore": "x/a**/b\n"},
			[]string{"x/ab/b", "x/a/b", "x/a/c/b"}, []string{"x/ab/b", "x/a/b"}},
		{"star stops at a slash", map[string]string{".gitignore": "d/*.c\n"},
			[]string{"d/a.c", "d/e/a.c"}, []string{"d/a.c"}},
		{"escapes", map[string]string{".gitignore": "\\#hash\n\\!bang\nsp\\ \nq\\?\n"},
			[]string{"#hash", "!bang", "sp ", "sp", "q?", "qa"}, []string{"#hash", "!bang", "sp ", "q?"}},
		{"trailing spaces trimmed, comments and CRLF", map[string]string{".gitignore": "\xef\xbb\xbf# x\r\ntrail   \r\n\r\n#y\n"},
			[]string{"trail", "x", "#y"}, []string{"trail"}},
		{"bracket expressions", map[string]string{".gitignore": "[!a]1\n[^b]2\n[a-c]3\n[[:digit:]]4\n[]x]5\n[a-]6\n"},
			[]string{"a1", "b1", "b2", "c2", "b3", "d3", "74", "x4", "]5", "x5", "-6", "b6"},
			[]string{"b1", "c2", "b3", "74", "]5", "x5", "-6"}},
		{"nested files win over the root's", map[string]string{".gitignore": "*.tmp\n", "sub/.gitignore": "!*.tmp\nlocal\n"},
			[]string{"a.tmp", "sub/b.tmp", "sub/local", "local"}, []string{"a.tmp", "sub/local"}},
		{"a nested pattern with a slash is relative to its directory", map[string]string{"sub/.gitignore": "x/y\n/z\n"},
			[]string{"sub/x/y", "sub/z", "sub/w/z", "x/y", "z"}, []string{"sub/x/y", "sub/z"}},
		{"info/exclude, below every .gitignore", map[string]string{".git/info/exclude": "*.bak\nsecret\n", ".gitignore": "!secret\n"},
			[]string{"a.bak", "secret"}, []string{"a.bak"}},
		{"malformed patterns match nothing", map[string]string{".gitignore": "[ab\n[[:nope:]]x\ntrail\\\n"},
			[]string{"[ab", "a", "nx", "trail\\", "trail"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files, tc.ignores)
			paths, isDir := treePaths(t, dir)
			m := matcherFor(t, dir)
			var got []string
			for _, p := range paths {
				if ex, err := m.Excluded(p, isDir[p]); err != nil {
					t.Fatal(err)
				} else if ex && !strings.HasSuffix(p, ".gitignore") {
					got = append(got, p)
				}
			}
			want := slices.Clone(tc.excluded)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("excluded %q, want %q", got, want)
			}
			if old && oldGitDiffers(tc.ignores[".gitignore"]) {
				t.Log("git before 2.52 reads this pattern otherwise (see gitBefore252): not compared with it")
				return
			}
			compareWithGit(t, dir, []string{""}, func(string) string { return fmt.Sprint(tc.ignores) })
		})
	}
}

// TestAgainstGit generates trees and ignore files, hundreds of them, and
// checks that Excluded agrees with git check-ignore on every path. Each
// tree is a directory of one repository (its ignore files apply beneath
// it as they would at a top), so that git is asked once.
func TestAgainstGit(t *testing.T) {
	needGit(t)
	old := gitBefore252(t)
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	dir := t.TempDir()
	gitInit(t, dir)
	var roots []string
	for seed := range uint64(rounds) {
		r := rand.New(rand.NewPCG(seed, 24))
		files, ignores := randomTree(r, old)
		root := fmt.Sprintf("seed%d", seed)
		writeFiles(t, filepath.Join(dir, root), files, ignores)
		roots = append(roots, root)
	}
	excluded := compareWithGit(t, dir, roots, func(root string) string {
		var b strings.Builder
		filepath.WalkDir(filepath.Join(dir, root), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == ".gitignore" {
				content, _ := os.ReadFile(p)
				fmt.Fprintf(&b, "%s: %q\n", p, content)
			}
			return nil
		})
		return b.String()
	})
	if excluded == 0 {
		t.Fatal("git excluded nothing in any tree: the generator tests nothing")
	}
}

// names are the path elements of generated trees: plain, dotted, and
// the bytes patterns give a meaning to.
var names = []string{"a", "b", "ab", "ba", "a.o", "b.c", ".x", "A", "1", "x y", "[a]", "*", "?", "#h", "!n", "t ", "a\\b", "-", "]", "abc", "build", "logs", "é"}

// pieces are what a generated pattern's elements are made of.
var pieces = []string{"a", "b", "ab", "*", "**", "?", "a*", "*b", "*.o", ".x", "[ab]", "[!a]", "[^b]", "[a-c]", "[[:alpha:]]", "[[:digit:]]",
	"[]a]", "[a-]", "[[:punct:]]", "[[x]", "\\*", "\\!", "\\#", "\\ ", "\\a", "build", "logs", "x y", "a\\b", "*?", "[", "[[:bogus:]]", "1", "é", "*é", "a**", "**b", "**/", "\\/"}

// randomTree makes a tree of files and directories (a directory's path
// ends in "/") and ignore files for it: at the root and in directories of
// the tree.
func randomTree(r *rand.Rand, old bool) (files []string, ignores map[string]string) {
	dirs := []string{""}
	taken := map[string]bool{}
	for range 3 + r.IntN(30) {
		parent := dirs[r.IntN(len(dirs))]
		p := parent + names[r.IntN(len(names))]
		if taken[p] {
			continue
		}
		taken[p] = true
		if r.IntN(3) == 0 {
			dirs = append(dirs, p+"/")
			files = append(files, p+"/")
		} else {
			files = append(files, p)
		}
	}
	ignores = map[string]string{".gitignore": randomIgnore(r, old)}
	for range r.IntN(3) {
		if d := dirs[r.IntN(len(dirs))]; d != "" {
			ignores[d+".gitignore"] = randomIgnore(r, old)
		}
	}
	return files, ignores
}

// randomIgnore makes an ignore file of a few patterns, comments, blank
// lines, trailing spaces and CRLF endings among them; with old, none
// that a git before 2.52 reads otherwise (oldGitDiffers).
func randomIgnore(r *rand.Rand, old bool) string {
	var b strings.Builder
	for range 1 + r.IntN(6) {
		switch r.IntN(12) {
		case 0:
			b.WriteString("# comment\n")
			continue
		case 1:
			b.WriteString("\n")
			continue
		}
		var l strings.Builder
		if r.IntN(4) == 0 {
			l.WriteString("!")
		}
		if r.IntN(5) == 0 {
			l.WriteString("/")
		}
		for i := range 1 + r.IntN(3) {
			if i > 0 {
				l.WriteString("/")
			}
			for range 1 + r.IntN(2) {
				l.WriteString(pieces[r.IntN(len(pieces))])
			}
		}
		if r.IntN(4) == 0 {
			l.WriteString("/")
		}
		switch r.IntN(8) {
		case 0:
			l.WriteString("  ")
		case 1:
			l.WriteString("\r")
		}
		if !old || !oldGitDiffers(l.String()) {
			b.WriteString(l.String() + "\n")
		}
	}
	return b.String()
}

// TestCompile checks that a list's pattern is refused where it would not
// do what it seems to, and taken otherwise.
func TestCompile(t *testing.T) {
	for _, tc := range []struct{ pattern, err string }{
		{"", "matches nothing"},
		{"!", "matches nothing"},
		{"#cache", "comment"},
		{"cache ", "ends in a space"},
		{"a/./b", `element "."`},
		{"../x", `element ".."`},
		{"a//b", `element ""`},
		{"[ab", "never match"},
		{"[[:nope:]]", "never match"},
		{"x\\", "never match"},
		{"a\x00b", "NUL"},
		{strings.Repeat("a", MaxPattern+1), "longer than"},
		{"node_modules/", ""},
		{"!keep.pyc", ""},
		{"**/__pycache__/", ""},
		{"/.venv", ""},
		{"\\#x", ""},
		{"x\\ ", ""},
	} {
		_, err := Compile(tc.pattern)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Compile(%q): %v", tc.pattern, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Compile(%q): %v, want an error saying %q", tc.pattern, err, tc.err)
		}
	}
}

// TestBudget checks that a pattern git matches by backtracking costs no
// more than its tokens times the path's bytes, and that a Matcher stops
// at its budget and decides nothing more.
func TestBudget(t *testing.T) {
	pattern := strings.Repeat("*a", 40) + "b"
	long := strings.Repeat("b", 3998) + "ab" // one "a": every "*" tried, and no match
	m := NewMatcher(1 << 40)
	m.Add("", ParseFile([]byte(pattern+"\n")))
	if ex, err := m.Excluded(long, false); err != nil || ex {
		t.Fatalf("Excluded: %v, %v", ex, err)
	}
	if spent := int64(1<<40) - m.left; spent > 82*4001+4001 {
		t.Errorf("spent %d steps on a pattern of 81 tokens and a path of 4000 bytes", spent)
	}
	m = NewMatcher(10000)
	m.Add("", ParseFile([]byte(pattern+"\n")))
	if _, err := m.Excluded(long, false); !errors.Is(err, ErrBudget) {
		t.Fatalf("Excluded past the budget: %v, want ErrBudget", err)
	}
	if _, err := m.Excluded("x", false); !errors.Is(err, ErrBudget) {
		t.Fatalf("Excluded after the budget: %v, want ErrBudget", err)
	}
}
