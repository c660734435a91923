//go:build linux || darwin

package sandbox

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// openFindings makes or takes the host's findings directory dir, for
// Start and SetFindings (package findings).
func openFindings(dir string, readWrite []string) (*findings.Dest, error) {
	d, err := findings.OpenDest(dir, readWrite)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return d, nil
}
