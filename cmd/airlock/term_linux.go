package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// isTerminal reports whether w, under any termtext Writer, is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := termtext.Raw(w).(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
