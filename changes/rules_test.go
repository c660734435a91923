package changes

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// manifestKinds is the manifest as path: kind.
func manifestKinds(p Patch) map[string]Kind {
	got := map[string]Kind{}
	for _, f := range p.Files {
		got[f.Path] = f.Kind
	}
	return got
}

// TestIgnoreRules checks that the original's ignore files leave out what
// they exclude among the paths the original did not have, and nothing
// else: an edit to a file the original had is carried whatever they say,
// and an ignore file the sandbox added or changed excludes nothing but
// is itself carried.
func TestIgnoreRules(t *testing.T) {
	orig := writeTree(t, map[string]node{
		".gitignore":        file("__pycache__/\n*.log\n.venv/\nbuild/\n"),
		"src/.gitignore":    file("local.cfg\n"),
		"src/app.py":        file("print(1)\n"),
		"build/out.txt":     file("v1\n"),
		"notes.log":         file("old\n"),
		".git/info/exclude": file("*.swp\n"),
	})
	mod := writeTree(t, map[string]node{
		".gitignore":                          file("__pycache__/\n*.log\n.venv/\nbuild/\nsecret.py\n"),
		"src/.gitignore":                      file("local.cfg\n"),
		"src/app.py":                          file("print(2)\n"),
		"src/secret.py":                       file("steal()\n"),
		"src/local.cfg":                       file("x=1\n"),
		"src/__pycache__/app.cpython-313.pyc": file("\x00pyc"),
		".venv/bin/python":                    link("/usr/bin/python3"),
		".venv/.gitignore":                    file("*\n"),
		"build/out.txt":                       file("v2\n"),
		"build/new.o":                         file("\x00obj"),
		"notes.log":                           file("new\n"),
		"new.log":                             file("x\n"),
		"sub/.gitignore":                      file("*\n"),
		"sub/file.go":                         file("package sub\n"),
		"a.swp":                               file("swap\n"),
		".git/info/exclude":                   file("*.swp\n"),
	})
	p := diffDirs(t, orig, mod, Limits{})
	want := map[string]Kind{".gitignore": Modified, "src/app.py": Modified, "src/secret.py": Added, "build/out.txt": Modified,
		"notes.log": Modified, "sub/.gitignore": Added, "sub/file.go": Added}
	if got := manifestKinds(p); !maps.Equal(got, want) {
		t.Errorf("manifest %v, want %v", got, want)
	}
	if !p.Complete || len(p.Omissions) != 0 {
		t.Errorf("Complete %v, omissions %v: an exclusion is no omission", p.Complete, p.Omissions)
	}
	wantEx := []Exclusion{{Class: ExcludeGitignore, Paths: 4, Dirs: 2, First: []string{".venv", "a.swp", "build/new.o"}}}
	if !slices.EqualFunc(p.Excluded, wantEx, func(a, b Exclusion) bool {
		return a.Class == b.Class && a.Paths == b.Paths && a.Dirs == b.Dirs && slices.Equal(a.First, b.First) && a.Unused == b.Unused
	}) {
		t.Errorf("excluded %+v, want %+v", p.Excluded, wantEx)
	}
	checkApplies(t, orig, mod, p, "src/local.cfg", "src/__pycache__", ".venv", "build/new.o", "new.log", "a.swp")
}

// TestExcludeOption checks the operator's patterns: they leave out what
// they match in either tree, a file the original had included, and a
// directory they exclude is never listed (so its entries do not count
// against Limits.Entries); a bad pattern fails Diff.
func TestExcludeOption(t *testing.T) {
	origSpec := map[string]node{"node_modules/a/index.js": file("v1\n"), "x.tmp": file("1\n"), "src/main.go": file("package main\n")}
	modSpec := map[string]node{"node_modules/a/index.js": file("v2\n"), "x.tmp": file("2\n"), "keep.tmp": file("k\n"),
		"src/main.go": file("package main // edited\n")}
	for i := range 50 {
		modSpec[fmt.Sprintf("node_modules/m%d/index.js", i)] = file("module\n")
	}
	orig, mod := writeTree(t, origSpec), writeTree(t, modSpec)
	opt := Options{Limits: Limits{Entries: 20}, Exclude: []string{"node_modules/", "*.tmp", "!keep.tmp"}}
	p, err := Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), opt)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	if got, want := manifestKinds(p), map[string]Kind{"keep.tmp": Added, "src/main.go": Modified}; !maps.Equal(got, want) {
		t.Errorf("manifest %v, want %v", got, want)
	}
	if len(p.Excluded) != 1 || p.Excluded[0].Class != ExcludePolicy || p.Excluded[0].Paths != 1 || p.Excluded[0].Dirs != 1 {
		t.Errorf("excluded %+v, want the policy's: 1 path (x.tmp), 1 directory (node_modules)", p.Excluded)
	}
	checkApplies(t, orig, mod, p, "node_modules", "x.tmp")

	opt.Exclude = []string{"ok", "[bad"}
	if _, err := Diff(FSTree(os.DirFS(orig)), FSTree(os.DirFS(mod)), opt); err == nil || !strings.Contains(err.Error(), "exclude[1]") {
		t.Errorf("Diff with a bad pattern: %v, want an error naming exclude[1]", err)
	}
}

// TestSourceFirst checks that when a limit bites, the patch keeps the
// edit of a source file the original had and leaves out what was added
// around it: binary caches sorting before it, text ones too.
func TestSourceFirst(t *testing.T) {
	doc := lines(200, "// doc ")
	orig := writeTree(t, map[string]node{"doc.go": file(doc), "z.go": file("package z\n")})
	spec := map[string]node{"doc.go": file(strings.Replace(doc, "// doc x\n", "// doc edited\n", 1)), "z.go": file("package z\n")}
	for i := range 40 {
		spec[fmt.Sprintf(".cache/go-build/%02d", i)] = file(randomBytes(uint64(i), 10<<10))
		spec[fmt.Sprintf("a-mod/pkg%02d.go", i)] = file(lines(10, "package pkg"))
	}
	mod := writeTree(t, spec)
	for _, lim := range []Limits{{PatchBytes: 64 << 10}, {Files: 5}} {
		p := diffDirs(t, orig, mod, lim)
		var carried []string
		for _, f := range p.Files {
			if f.Omitted == "" {
				carried = append(carried, f.Path)
			}
		}
		if !slices.Contains(carried, "doc.go") {
			t.Errorf("%+v: doc.go's edit is left out; carried %q", lim, carried)
		}
		if p.Complete || len(p.Omissions) != 1 || p.Omissions[0].Class != OmitLimit || p.Omissions[0].Count != len(p.Files)-len(carried) {
			t.Errorf("%+v: complete %v, omissions %+v, want one class, limit, of %d", lim, p.Complete, p.Omissions, len(p.Files)-len(carried))
		}
		binaryIn := slices.ContainsFunc(p.Files, func(f FileChange) bool { return f.Binary && f.Omitted == "" })
		textOut := slices.ContainsFunc(p.Files, func(f FileChange) bool { return !f.Binary && f.Omitted != "" })
		if binaryIn && textOut {
			t.Errorf("%+v: a binary file is carried while a text file is left out", lim)
		}
		checkApplies(t, orig, mod, p)
	}
}

// TestOmissionClasses checks that each omission has its class, and that
// Omissions counts them, in OmitClasses' order, with the first of each.
func TestOmissionClasses(t *testing.T) {
	orig := writeTree(t, map[string]node{"keep": file("k\n")})
	mod := writeTree(t, map[string]node{"keep": file("k\n"), "big1": file(strings.Repeat("b", 3000)), "big2": file(strings.Repeat("c", 3000)),
		"fifo": {fifo: true}, ".git/config": file("[core]\n"), "small": file("s\n")})
	p := diffDirs(t, orig, mod, Limits{FileBytes: 1000})
	want := []Omission{{OmitLarge, 2, "big1"}, {OmitSkipped, 1, "fifo"}, {OmitGit, 1, ".git/config"}}
	if !slices.Equal(p.Omissions, want) {
		t.Fatalf("omissions %+v, want %+v", p.Omissions, want)
	}
	for _, f := range p.Files {
		if (f.Omitted == "") != (f.Class == "") {
			t.Errorf("%s: omitted %q with class %q", f.Path, f.Omitted, f.Class)
		}
	}
	if got := want[0].String(); got != `2 changes not in the patch (large): over the per-file limit; the first: big1` {
		t.Errorf("String: %s", got)
	}
	if !errors.Is(p.Incomplete(), ErrIncomplete) {
		t.Errorf("Incomplete: %v", p.Incomplete())
	}
}

// TestRuleSteps checks that rules whose matching runs past
// Limits.RuleSteps exclude nothing more, and that the patch says so.
func TestRuleSteps(t *testing.T) {
	rule := strings.Repeat("*a", 30) + "*\n" // 30 a's or more
	orig := writeTree(t, map[string]node{".gitignore": file(rule)})
	spec := map[string]node{".gitignore": file(rule)}
	for i := range 20 {
		spec[fmt.Sprintf("%s%02d", strings.Repeat("a", 100), i)] = file("x\n")
	}
	mod := writeTree(t, spec)
	p := diffDirs(t, orig, mod, Limits{RuleSteps: 20000})
	if len(p.Excluded) != 1 || p.Excluded[0].Unused == "" || p.Excluded[0].Paths+len(p.Files) != 20 {
		t.Fatalf("excluded %+v with %d files, want some excluded, the rest carried, and why", p.Excluded, len(p.Files))
	}
	if p.Excluded[0].Paths == 0 || len(p.Files) == 0 {
		t.Errorf("%d excluded, %d carried: want both, the budget spent between", p.Excluded[0].Paths, len(p.Files))
	}
	var excluded []string
	for name := range spec {
		if !slices.ContainsFunc(p.Files, func(f FileChange) bool { return f.Path == name }) {
			excluded = append(excluded, name)
		}
	}
	checkApplies(t, orig, mod, p, excluded...)
}
