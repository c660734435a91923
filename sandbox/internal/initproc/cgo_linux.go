//go:build cgo

package initproc

// PsxReadsProc reports whether psx looks for the process's threads in
// /proc/<getpid()>/task, which must then be the /proc of the init's pid
// namespace: with cgo, psx is libpsx, which does.
const PsxReadsProc = true
