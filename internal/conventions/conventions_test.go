// Package conventions holds the repository-wide tests of airlock's code
// conventions: every package has a doc comment, and so does every exported
// name.
package conventions

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// pkg is one package of the repository: its directory, name and files
// (tests left out).
type pkg struct {
	dir, name string
	files     []*ast.File
}

// packages parses every package of the repository.
func packages(t *testing.T) (*token.FileSet, []*pkg) {
	t.Helper()
	fset := token.NewFileSet()
	byKey := map[string]*pkg{}
	var out []*pkg
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		key := filepath.Dir(path) + ":" + f.Name.Name
		if byKey[key] == nil {
			byKey[key] = &pkg{dir: filepath.Dir(path), name: f.Name.Name}
			out = append(out, byKey[key])
		}
		byKey[key].files = append(byKey[key].files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, out
}

func docOf(t *testing.T, fset *token.FileSet, p *pkg) *doc.Package {
	t.Helper()
	d, err := doc.NewFromFiles(fset, p.files, p.dir)
	if err != nil {
		t.Fatalf("%s: %v", p.dir, err)
	}
	return d
}

func TestEveryPackageHasADocComment(t *testing.T) {
	fset, pkgs := packages(t)
	for _, p := range pkgs {
		if strings.TrimSpace(docOf(t, fset, p).Doc) == "" {
			t.Errorf("%s: package %s has no doc comment", p.dir, p.name)
		}
	}
}

func TestEveryExportedNameIsDocumented(t *testing.T) {
	fset, pkgs := packages(t)
	for _, p := range pkgs {
		if p.name == "main" {
			continue
		}
		d := docOf(t, fset, p)
		check := func(kind, name, text string) {
			if strings.TrimSpace(text) == "" {
				t.Errorf("%s: %s %s has no doc comment", p.dir, kind, name)
			}
		}
		for _, f := range d.Funcs {
			check("func", f.Name, f.Doc)
		}
		for _, ty := range d.Types {
			check("type", ty.Name, ty.Doc)
			for _, f := range ty.Funcs {
				check("func", f.Name, f.Doc)
			}
			for _, m := range ty.Methods {
				check("method", ty.Name+"."+m.Name, m.Doc)
			}
		}
	}
}
