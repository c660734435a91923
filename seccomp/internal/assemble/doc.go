// Package assemble builds airlock's seccomp filter at build time and
// renders it as Go source for package seccomp.
//
// It holds the refusals (rules_linux.go), the hand-written header of the
// program (header_linux.go) and the assembly of the name rules with
// github.com/elastic/go-seccomp-bpf (build_linux.go), for each
// architecture in GOARCHes. go generate ./seccomp runs it through
// internal/gen and writes program_linux_<goarch>.go and
// rules_generated_linux.go; package seccomp
// compiles the result in and never imports the library, whose syscall
// tables for every architecture cost each airlock process a quarter of a
// millisecond of package initialisation. Package seccomp's tests run Files
// and fail when a committed file differs from what it returns now.
//
// It is Linux-only: the rules' constants come from golang.org/x/sys/unix
// for Linux.
package assemble
