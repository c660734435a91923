package selftest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// batteryEnv makes the test binary run the battery and print its report
// as JSON instead of running tests: the rootless test re-runs the binary
// that way as an unprivileged user.
const batteryEnv = "AIRLOCK_SELFTEST_TEST_BATTERY"

// TestMain makes the test binary a sandbox's init when re-executed as one,
// a payload when the battery runs it inside a sandbox (as "/.airlock/self
// payload NAME ARG..." — the test binary is what BindSelf binds), and the
// battery itself under batteryEnv.
func TestMain(m *testing.M) {
	sandbox.Init()
	if len(os.Args) > 2 && os.Args[1] == "payload" {
		os.Exit(payload.Run(os.Args[2], os.Args[3:]))
	}
	if os.Getenv(batteryEnv) != "" {
		rep, err := Run(context.Background(), Options{})
		if rep != nil {
			_ = json.NewEncoder(os.Stdout).Encode(rep)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
