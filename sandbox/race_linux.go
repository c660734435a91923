//go:build race

package sandbox

// raceEnv is added to the init's environment in a binary built with the
// race detector (tests run with -race): the detector's runtime otherwise
// sleeps a second at exit (GORACE atexit_sleep_ms, 1000 by default) in
// every process with more than one thread, so each sandbox would take a
// second longer to end.
const raceEnv = "GORACE=atexit_sleep_ms=0"
