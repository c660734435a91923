// Command gen writes package initproc's digest of the sources the init is
// built from (package sources). Run it through go generate
// ./sandbox/internal/initproc.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc/internal/sources"
)

func main() {
	if err := generate(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// generate writes sources.File in the current directory (initproc's, as
// go generate runs it), from the module's root three levels up.
func generate() error {
	d, err := sources.Digest(filepath.Join("..", "..", ".."))
	if err != nil {
		return err
	}
	return os.WriteFile(sources.File, sources.Render(d), 0o644)
}
