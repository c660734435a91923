//go:build !linux && !darwin

package approval

import (
	"context"
	"time"
)

// runDecider refuses: the decider's process-group handling is written for
// Linux and macOS, and a decider that cannot be contained is not run.
func runDecider(context.Context, []string, []byte, time.Duration) ([]byte, string, error) {
	return nil, "cannot be run: an external decider runs on Linux and macOS only", nil
}
