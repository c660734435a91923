package sandbox

import (
	"os"
	"testing"
)

// TestMain makes the test binary a sandbox init when re-executed as one,
// and a payload when a test runs it inside a sandbox.
func TestMain(m *testing.M) {
	Init()
	if name := os.Getenv(payloadEnv); name != "" {
		os.Exit(runPayload(name, os.Args[1:]))
	}
	os.Exit(m.Run())
}
