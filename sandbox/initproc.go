package sandbox

import (
	"fmt"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// ProbeRequest asks the init to check, from inside the sandbox and after
// the privilege drop, that the sandbox holds (issue 6, start-up probes).
type ProbeRequest = initproc.ProbeRequest

// ProbeResult is one start-up probe's outcome. The zero value is a
// failure.
type ProbeResult = initproc.ProbeResult

// ProbesFailed returns the failed results, nil if all passed.
func ProbesFailed(res []ProbeResult) []ProbeResult { return initproc.ProbesFailed(res) }

// probesPassed fails unless the init ran the start-up probes and every
// one passed.
func probesPassed(res []ProbeResult) error {
	if len(res) == 0 {
		return fmt.Errorf("sandbox: %w: the init ran none", ErrProbe)
	}
	if bad := ProbesFailed(res); len(bad) > 0 {
		parts := make([]string, len(bad))
		for i, r := range bad {
			parts[i] = r.Name + ": " + r.Detail
		}
		return fmt.Errorf("sandbox: %w: %s", ErrProbe, strings.Join(parts, "; "))
	}
	return nil
}
