// Package foreignabi makes a system call through another architecture's
// entry point (int 0x80, the i386 ABI, on amd64), so that tests can show
// the seccomp filter kills it rather than letting it past rules written
// for the native syscall table.
package foreignabi
