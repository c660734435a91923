package changes_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/changes"
)

// Compare two directories and print the manifest and the patch.
func Example() {
	orig, _ := os.MkdirTemp("", "orig")
	mod, _ := os.MkdirTemp("", "mod")
	defer os.RemoveAll(orig)
	defer os.RemoveAll(mod)
	os.WriteFile(filepath.Join(orig, "hello.txt"), []byte("hello\nworld\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "hello.txt"), []byte("hello\nthere\n"), 0o644)
	os.Symlink("/etc/shadow", filepath.Join(mod, "shadow"))

	p, err := changes.Diff(changes.FSTree(os.DirFS(orig)), changes.FSTree(os.DirFS(mod)), changes.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range p.Files {
		fmt.Println(f.Kind, f.NewMode, changes.QuotePath(f.Path))
	}
	fmt.Print(string(p.Diff))
	// Output:
	// modified 100644 hello.txt
	// added 120000 shadow
	// diff --git a/hello.txt b/hello.txt
	// index 94954abda49de8615a048f8d2e64b5de848e27a1..c4c04173748f9107f27a8a2e4007ec50c88da299 100644
	// --- a/hello.txt
	// +++ b/hello.txt
	// @@ -1,2 +1,2 @@
	//  hello
	// -world
	// +there
	// diff --git a/shadow b/shadow
	// new file mode 120000
	// index 0000000000000000000000000000000000000000..e5e29bb3afde8c512bb395393b8723406f6a99b8
	// --- /dev/null
	// +++ b/shadow
	// @@ -0,0 +1 @@
	// +/etc/shadow
	// \ No newline at end of file
}
