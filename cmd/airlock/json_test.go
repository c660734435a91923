package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJSONOK fails unless the file args[0] holds one or more JSON values
// that encoding/json reads, and nothing a terminal interprets: every
// character prints, or is a new line ("jsonok out.json").
func cmdJSONOK(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: jsonok FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	for ; ; n++ {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			ts.Fatalf("%s: value %d is not JSON: %v", args[0], n+1, err)
		}
	}
	if n == 0 {
		ts.Fatalf("%s: no JSON value", args[0])
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 || r != '\n' && !unicode.IsPrint(r) {
			ts.Fatalf("%s: byte %d: %q reaches the terminal raw", args[0], i, data[i:i+size])
		}
		i += size
	}
}

// TestEveryJSONThroughWriteJSON: no command encodes JSON for stdout by
// itself; termtext.WriteJSON does, in JSON's escapes, past the terminal's.
// (A MarshalJSON method encodes a value, not an output.)
func TestEveryJSONThroughWriteJSON(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "MarshalJSON" {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "json" &&
					(sel.Sel.Name == "Marshal" || sel.Sel.Name == "MarshalIndent" || sel.Sel.Name == "NewEncoder") {
					t.Errorf("%s: json.%s: print JSON with termtext.WriteJSON", fset.Position(sel.Pos()), sel.Sel.Name)
				}
				return true
			})
		}
	}
}
