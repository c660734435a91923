package sandbox

import "github.com/airlock-sandbox/airlock/sandbox/internal/initproc"

// Init runs the sandbox's init when this process is one that was asked to
// run late, and never returns then; otherwise it returns at once. An init
// normally runs before main, from the initialiser of the package that
// holds it (internal/initproc); only a test binary's init that must leave
// a test hole open waits for Init. Call it first thing in main, and in the
// TestMain of packages whose tests start sandboxes.
func Init() {
	if initproc.IsInit() {
		initproc.Main()
	}
}

// Probe runs the start-up probes in the calling process, which must be
// inside a sandbox: the checks of issue 6 item 1 (uid, capability sets,
// no_new_privs, seccomp mode, Landlock, only lo, no route, the host's
// canary file, /root and /home unreachable, the host's canary listener
// unreachable, and only stdio open). The init runs the same checks after
// its privilege drop when Config.Probes is set; tests run them from a
// target.
func Probe(req ProbeRequest) []ProbeResult { return initproc.Probe(req) }
