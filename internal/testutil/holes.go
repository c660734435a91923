package testutil

import "testing"

// SandboxHoleEnv is the environment variable through which a test makes
// every sandbox its binary starts leave one hole open (see the sandbox
// package's testhole_linux.go). The sandbox reads it only in a test
// binary, so it opens nothing in airlock's own binary.
const SandboxHoleEnv = "AIRLOCK_TEST_HOLE"

// SandboxHole is one step of the sandbox's setup that a test can make the
// init skip, and the start-up probes that must then fail.
type SandboxHole struct {
	// Name is the hole, as the sandbox knows it.
	Name string
	// Probes are the probes that watch it: each must fail, and every
	// other probe must pass.
	Probes []string
	// Maybe are probes that may fail too on some hosts: with the host's
	// network namespace shared, the host's canary listener is reachable
	// unless Landlock (ABI 4 and later) refuses the connection.
	Maybe []string
}

// SandboxHoles lists every hole, each with the probes it must trip.
var SandboxHoles = []SandboxHole{
	{Name: "uid", Probes: []string{"uid"}},
	{Name: "caps", Probes: []string{"caps"}},
	{Name: "no_new_privs", Probes: []string{"no_new_privs"}},
	{Name: "seccomp", Probes: []string{"seccomp"}},
	{Name: "landlock", Probes: []string{"landlock"}},
	{Name: "netns", Probes: []string{"interfaces", "routes"}, Maybe: []string{"canary_listener"}},
	{Name: "homes", Probes: []string{"host_dirs"}},
}

// OpenSandboxHole makes every sandbox that t starts, until t ends, leave
// the named hole open. It sets an environment variable for the whole
// process, so t (and its parents) must not be parallel.
func OpenSandboxHole(t testing.TB, name string) {
	t.Helper()
	t.Setenv(SandboxHoleEnv, name)
}
