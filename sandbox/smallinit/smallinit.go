// Package smallinit is imported by cmd/airlock-init alone, and that is
// its one job: it links the sandbox's init (sandbox/internal/initproc,
// which runs from its package initialiser) into a program of its own, a
// few megabytes instead of airlock's whole binary, which sandbox.Start
// runs as the init when it lies beside the airlock binary, trusted and
// built from the same sources (docs/sandbox.md, "The small init").
package smallinit

import (
	"fmt"
	"os"

	"github.com/airlock-sandbox/airlock/internal/reexec"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// Main is airlock-init's main. The init itself never gets here (it runs
// from initproc's initialiser and exits); a check of this binary's build
// (airlock doctor) ends here with status 0, and anything else is a person
// running it by hand, told what it is, with status 2.
func Main() {
	if reexec.Is(initproc.CheckArg0) {
		os.Exit(0) // initproc's initialiser found the same build
	}
	fmt.Fprintln(os.Stderr, "airlock-init: the sandbox's init, run by airlock from the directory of its binary; it has nothing to do by hand (docs/sandbox.md, \"The small init\")")
	os.Exit(2)
}
