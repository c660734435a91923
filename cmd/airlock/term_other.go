//go:build !linux

package main

import "io"

// isTerminal reports false: colour is used on Linux terminals only.
func isTerminal(io.Writer) bool { return false }
