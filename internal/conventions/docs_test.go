package conventions

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoPointerOutOfTheRepository: no comment or document cites a file
// that is not in the repository (the product brief, the shared
// directory it came from); the contracts they name live in docs/.
func TestNoPointerOutOfTheRepository(t *testing.T) {
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, "conventions/docs_test.go") ||
			!(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".txtar") || strings.HasSuffix(path, ".sh")) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, bad := range []string{"PRODUCT.md", "../shared", "/work/shared"} {
			if i := bytes.Index(src, []byte(bad)); i >= 0 {
				t.Errorf("%s:%d cites %s, which is not in the repository: point to docs/ instead",
					path, bytes.Count(src[:i], []byte("\n"))+1, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocsIndexed: docs/README.md links every contract in docs/.
func TestDocsIndexed(t *testing.T) {
	index, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../docs/*.md")
	for _, f := range files {
		name := filepath.Base(f)
		if name != "README.md" && !bytes.Contains(index, []byte("("+name+")")) {
			t.Errorf("docs/README.md does not link %s", name)
		}
	}
}
