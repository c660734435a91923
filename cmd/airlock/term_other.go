//go:build !linux

package main

import "os"

// isTerminal reports false: colour is used on Linux terminals only.
func isTerminal(*os.File) bool { return false }
