package selftest

import (
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain makes the test binary a sandbox's init when re-executed as one,
// and a payload when a sandbox runs it as "/.airlock/self payload NAME
// ARG..." (the test binary is what BindSelf binds), so that Run works in
// this process as it does in airlock's. It removes the binaries the
// battery tests build.
func TestMain(m *testing.M) {
	sandbox.Init()
	if len(os.Args) > 2 && os.Args[1] == "payload" {
		os.Exit(payload.Run(os.Args[2], os.Args[3:]))
	}
	code := m.Run()
	testutil.RemoveBinaries()
	os.Exit(code)
}
