package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"mvdan.cc/sh/v3/syntax"
)

// readmeLine is one command line of the README's shell blocks: its text
// as written (without a trailing comment) and its statements, parsed.
type readmeLine struct {
	text  string
	stmts []*syntax.Stmt
}

// readmeLines parses every line of the README's ```sh blocks.
func readmeLines(readme []byte) ([]readmeLine, error) {
	var out []readmeLine
	rest := readme
	for {
		_, block, ok := bytes.Cut(rest, []byte("```sh\n"))
		if !ok {
			return out, nil
		}
		block, rest, ok = bytes.Cut(block, []byte("```\n"))
		if !ok {
			return nil, errors.New("README.md: a ```sh block is not closed")
		}
		for _, line := range strings.Split(string(block), "\n") {
			f, err := syntax.NewParser().Parse(strings.NewReader(line), "README.md")
			if err != nil {
				return nil, fmt.Errorf("README.md: %q does not parse as shell: %w", line, err)
			}
			if len(f.Stmts) == 0 {
				continue
			}
			text := line[f.Stmts[0].Pos().Offset():f.Stmts[len(f.Stmts)-1].End().Offset()]
			out = append(out, readmeLine{text: text, stmts: f.Stmts})
		}
	}
}

// calls lists every simple command of stmts, nested ones ($(…), &&)
// included, each as its words: a word that is not a literal (a
// substitution, "$S") becomes "VALUE".
func calls(stmts []*syntax.Stmt) [][]string {
	var out [][]string
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			c, ok := n.(*syntax.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			words := make([]string, len(c.Args))
			for i, w := range c.Args {
				if lit := w.Lit(); lit != "" {
					words[i] = lit
				} else if s, ok := quoted(w); ok {
					words[i] = s
				} else {
					words[i] = "VALUE"
				}
			}
			out = append(out, words)
			return true
		})
	}
	return out
}

// quoted is the value of a word that is one quoted literal ('…' or "…").
func quoted(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.SglQuoted:
		return p.Value, true
	case *syntax.DblQuoted:
		if len(p.Parts) == 1 {
			if l, ok := p.Parts[0].(*syntax.Lit); ok {
				return l.Value, true
			}
		}
		if len(p.Parts) == 0 {
			return "", true
		}
	}
	return "", false
}

// readme is the repository's README.
func readme(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadmeCommandsParse checks every airlock command line the README
// shows, run or not by the scripts: the command exists, and its flags and
// arguments are ones it takes.
func TestReadmeCommandsParse(t *testing.T) {
	lines, err := readmeLines(readme(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		for _, words := range calls(l.stmts) {
			args, ok := airlockArgs(words)
			if !ok {
				continue
			}
			n++
			root := newRootCmd()
			c, rest, err := root.Find(args)
			if err == nil {
				err = c.ParseFlags(rest)
			}
			if err == nil && c != root {
				err = c.ValidateArgs(c.Flags().Args())
			}
			if err != nil || c == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				t.Errorf("README.md: %s: %v", l.text, err)
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d airlock command lines in the README; the pattern no longer finds them", n)
	}
}

// airlockArgs returns the arguments of an airlock command line: airlock
// ARGS, or go run ./cmd/airlock ARGS.
func airlockArgs(words []string) ([]string, bool) {
	switch {
	case words[0] == "airlock":
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/airlock":
		return words[3:], true
	}
	return nil, false
}

// TestReadmeBenchmarks checks every go test -bench command of the README
// (the Measured table's included): its package exists and its pattern
// selects at least one benchmark of it.
func TestReadmeBenchmarks(t *testing.T) {
	n := 0
	for _, code := range regexp.MustCompile("`(go test [^`]*-bench[^`]*)`").FindAllSubmatch(readme(t), -1) {
		f, err := syntax.NewParser().Parse(strings.NewReader(string(code[1])), "README.md")
		if err != nil {
			t.Fatalf("README.md: %s: %v", code[1], err)
		}
		for _, words := range calls(f.Stmts) {
			pkg, pattern := "", ""
			for i, w := range words {
				switch {
				case strings.HasPrefix(w, "./"):
					pkg = w
				case w == "-bench" && i+1 < len(words):
					pattern = words[i+1]
				}
			}
			n++
			if got := benchmarksMatching(t, filepath.Join("../..", pkg), pattern); len(got) == 0 {
				t.Errorf("README.md: %s: the pattern %q selects no benchmark of %s", code[1], pattern, pkg)
			}
		}
	}
	if n == 0 {
		t.Error("no go test -bench command found in the README")
	}
}

// benchmarksMatching lists the benchmarks of the package in dir whose
// names the -bench pattern selects (its first, top-level element).
func benchmarksMatching(t *testing.T, dir, pattern string) []string {
	t.Helper()
	re, err := regexp.Compile(strings.SplitN(pattern, "/", 2)[0])
	if err != nil {
		t.Errorf("-bench %q: %v", pattern, err)
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	var out []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Benchmark\w*)\(b \*testing\.B\)`).FindAllSubmatch(src, -1) {
			if re.Match(m[1]) {
				out = append(out, string(m[1]))
			}
		}
	}
	return out
}

// TestReadmeGoVersion keeps the Go version the README asks for equal to
// go.mod's.
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	if want := "Go " + string(m[1]) + " or later"; !bytes.Contains(readme(t), []byte(want)) {
		t.Errorf("README.md does not say %q (go.mod's go line)", want)
	}
}

// cmdReadmeLine runs the README shell line that holds args[0], exactly
// as written (its trailing comment left out), with sh in the script's
// directory ("readmeline 'airlock launch --plan'"); it fails unless the
// line succeeds, and leaves its stdout and stderr for the next commands.
func cmdReadmeLine(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: readmeline SUBSTRING")
	}
	data, err := os.ReadFile(filepath.Join(ts.Getenv("AIRLOCK_REPO"), "README.md"))
	ts.Check(err)
	lines, err := readmeLines(data)
	ts.Check(err)
	var found []string
	for _, l := range lines {
		if strings.Contains(l.text, args[0]) {
			found = append(found, l.text)
		}
	}
	if len(found) != 1 {
		ts.Fatalf("README.md has %d shell lines holding %q, want 1: %q", len(found), args[0], found)
	}
	ts.Logf("README.md: %s", found[0])
	ts.Check(ts.Exec("sh", "-c", found[0]))
}
