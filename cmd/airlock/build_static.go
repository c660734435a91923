//go:build !cgo

package main

// buildKind is how this binary was built, for doctor's "Build:" line.
const buildKind = "static"
