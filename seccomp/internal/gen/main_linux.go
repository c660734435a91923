// Command gen writes package seccomp's generated filter files: it
// assembles the filter for every architecture in assemble.GOARCHes with
// github.com/elastic/go-seccomp-bpf, at build time, so that the airlock
// binary does not link the library. It also removes generated files that
// assemble no longer returns. Run it from the package's directory through
// go generate ./seccomp (Linux only).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/seccomp/internal/assemble"
)

func main() {
	dir := flag.String("dir", ".", "directory of package seccomp")
	flag.Parse()
	if err := generate(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// generate writes the files into dir and removes stale ones.
func generate(dir string) error {
	files, err := assemble.Files()
	if err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "program_linux_*.go"))
	if err != nil {
		return err
	}
	for _, path := range old {
		if _, ok := files[filepath.Base(path)]; ok || strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(src, []byte(assemble.Header+"\n")) {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}
