// Package initproc is a sandbox's init: the process that sandbox.Start
// re-executes from the calling binary into fresh namespaces, where, as pid
// 1, it builds the filesystem view, drops every privilege, runs the
// start-up probes, runs the target and reaps. It also holds what the
// parent and the init share: the control protocol, its socket and the
// workspace stream.
//
// The init runs from this package's initialiser, before main and before
// the initialisers of most of the binary's packages. Go initialises a
// package once everything it imports is initialised, picking the first
// ready one in import-path order; this package imports only the standard
// library's lower layers, golang.org/x/sys/unix, go-landlock and airlock's
// seccomp, hostpath, mountinfo and reexec packages (the filter is compiled
// in; internal/reexec is how a re-executed airlock knows it is the init),
// so a re-executed init skips the rest of the binary's start-up: the
// command-line framework and the image, cgroup, YAML and JSON Schema
// libraries. That is also why it
// may not import net, os/user, archive/tar, path/filepath or testing
// (each initialised late, or by a package that is), nor the limits
// package: cmd/airlock's TestInitRunsEarly fails when it does.
//
// sandbox.Init runs the init from main instead when the parent asks for
// it (LateArg): a test hole (Hole) is registered by a package only test
// binaries link, whose initialiser runs after this one's.
package initproc
