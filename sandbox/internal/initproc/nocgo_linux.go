//go:build !cgo

package initproc

// PsxReadsProc reports whether psx looks for the process's threads in
// /proc/<getpid()>/task: without cgo, psx is the Go runtime's
// AllThreadsSyscall, which reads nothing in /proc.
const PsxReadsProc = false
