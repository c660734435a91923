// Package bpfvm runs seccomp filters in golang.org/x/net/bpf's VM for
// tests: the input a filter sees for one system call, and the action it
// returns. It is shared by the tests of seccomp and of its assembler.
package bpfvm
