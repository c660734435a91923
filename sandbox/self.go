package sandbox

import "github.com/airlock-sandbox/airlock/sandbox/internal/initproc"

// BindSelf binds the calling binary read-only at SelfPath inside, so that
// a Go program (a test binary, airlock's demo and selftest) can run
// itself, or payloads of its own, in the sandbox: set Path to SelfPath.
// The bind is read-only, so neither the path nor /proc/<pid>/exe of a
// process running it opens the host binary for writing.
func (c *Config) BindSelf() {
	c.Binds = append(c.Binds, Bind{Host: initproc.SelfExe, Inside: SelfPath})
}
