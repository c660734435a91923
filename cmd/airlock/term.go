package main

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// isTerminal reports whether w, under any termtext Writer, is a terminal,
// on every system: a terminal gets the contained code's output through a
// termtext Writer and never an untrusted patch (golang.org/x/term asks
// the system as each does: TCGETS on Linux, TIOCGETA on macOS).
func isTerminal(w io.Writer) bool {
	f, ok := termtext.Raw(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
