package initproc

import "runtime"

//go:generate go run ./internal/gen

// How the parent makes sure that the init it runs is of its own build
// (docs/sandbox.md, "The small init").
const (
	// CheckArg0 is the program (internal/reexec) that only checks its
	// build against EnvBuild's and exits (airlock doctor; smallinit.Main).
	CheckArg0 = "airlock-sandbox-init-check"
	// EnvBuild carries the parent's Build. A binary started as the init
	// or CheckArg0 with EnvBuild other than its own Build writes
	// OtherBuildMessage on stderr and exits with ExitOtherBuild, first
	// thing, before it does anything else.
	EnvBuild          = "_AIRLOCK_SANDBOX_INIT_BUILD"
	ExitOtherBuild    = 3
	OtherBuildMessage = "airlock-sandbox-init: built from other sources than the airlock that started it: refused\n"
)

// Build is this binary's init build: the digest of the sources the init
// is built from (SourceDigest) and the Go release that built it.
func Build() string { return SourceDigest + " " + runtime.Version() }
