package sandbox

import "github.com/airlock-sandbox/airlock/sandbox/internal/initproc"

// ProbeRequest asks the init to check, from inside the sandbox and after
// the privilege drop, that the sandbox holds (issue 6, start-up probes).
type ProbeRequest = initproc.ProbeRequest

// ProbeResult is one start-up probe's outcome. The zero value is a
// failure.
type ProbeResult = initproc.ProbeResult

// ProbesFailed returns the failed results, nil if all passed.
func ProbesFailed(res []ProbeResult) []ProbeResult { return initproc.ProbesFailed(res) }
