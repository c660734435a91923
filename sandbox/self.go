package sandbox

// selfExe is the host path of a Bind that means "the binary the init runs
// from", which the init reaches through its own /proc/self/exe even when
// the path to it is closed to the sandbox's uid (a 0700 build directory).
const selfExe = "/proc/self/exe"

// BindSelf binds the calling binary read-only at SelfPath inside, so that
// a Go program (a test binary, airlock's demo and selftest) can run
// itself, or payloads of its own, in the sandbox: set Path to SelfPath.
// The bind is read-only, so neither the path nor /proc/<pid>/exe of a
// process running it opens the host binary for writing.
func (c *Config) BindSelf() {
	c.Binds = append(c.Binds, Bind{Host: selfExe, Inside: SelfPath})
}
