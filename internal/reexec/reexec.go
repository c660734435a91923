// Package reexec is the one convention by which airlock runs a program of
// its own by executing its own binary again: the sandbox's init
// (sandbox/internal/initproc), the small init's build check, the macOS
// launcher and its start-up probe (sandbox/internal/launch) and the
// doctor's probe child (doctor). The parent names the program in the
// child's environment (Mark); the package that holds the program asks, in
// its initialiser, whether it is the one named (Is), and if so runs it and
// exits. The program's own arguments follow argv[0], which is its name
// where the parent chooses it (everywhere but under sandbox-exec, which
// executes argv[0]).
//
// Why an initialiser, not main: a package's initialiser runs as soon as
// the packages it imports are initialised, so a program whose package
// imports little skips the start-up of the rest of the binary (the
// command-line framework, the image, cgroup, YAML and JSON Schema
// libraries). The sandbox's init starts that way on every run
// (cmd/airlock's TestInitRunsEarly). This package imports only os, so
// that any of them may use it.
//
// `airlock session exec`'s quick client (holder/quick) also runs from an
// initialiser, but it is no re-executed program: it answers the caller's
// own command line, by its words, and falls through to main when it
// cannot. The payloads (package payload) run from main, as the command
// `airlock payload`.
//
// The environment is the parent's to set: the mark says which program the
// parent meant, nothing more; each program still checks what it is handed.
package reexec

import "os"

// Env names, in the environment of airlock's binary, the program to run.
const Env = "_AIRLOCK_PROGRAM"

// Mark is the environment entry that makes airlock's binary run program
// name.
func Mark(name string) string { return Env + "=" + name }

// Is reports whether this process was started to run program name.
func Is(name string) bool { return os.Getenv(Env) == name }
