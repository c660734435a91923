package sandbox

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// Test holes (issue 6, item 6: "each probe made to fail by a test-only
// setup option that leaves a hole open, and shown to abort"). A test can
// make every sandbox its binary starts skip exactly one step of the
// init's setup, so that the start-up probe watching that step is seen to
// fail for real and the start to be refused.
//
// A test names the hole in the environment variable holeEnv of the
// process that calls Start or StartSession (testutil.OpenSandboxHole).
// Why that is safe in production:
//
//   - The parent reads the variable only when testing.Testing() reports
//     true, which it does only in a binary built by "go test" (the go
//     command links test binaries with -X testing.testBinary=1). airlock's
//     own binary is never a test binary, so there the variable is not even
//     read: no environment, policy, plan or flag can open a hole in it.
//     (A build that passes that linker flag on purpose could: whoever
//     controls the build controls the code anyway.)
//   - The init, re-executed from the same binary, honours a hole it is sent
//     only under the same condition, and refuses to start at all when it is
//     sent one outside a test binary (internal/initproc, checkHole).
//   - An unknown name fails the start: a misspelt hole must not make a test
//     pass by opening nothing.
//
// The init records an open hole in the receipt ("test_hole").
const holeEnv = "AIRLOCK_TEST_HOLE"

// testBinary reports whether this binary was built by "go test". A
// variable only so that a test can play a production binary
// (TestHoleOutsideTests); nothing else assigns it.
var testBinary = testing.Testing

// holeFromEnv returns the hole the calling test asked for: none outside a
// test binary, whatever the environment says.
func holeFromEnv() (initproc.Hole, error) {
	if !testBinary() {
		return "", nil
	}
	h := initproc.Hole(os.Getenv(holeEnv))
	if h == "" || initproc.KnownHole(h) {
		return h, nil
	}
	names := []string{string(initproc.HoleInitWrites)}
	for _, k := range initproc.Holes {
		names = append(names, string(k))
	}
	return "", fmt.Errorf("sandbox: test hole %q (%s): unknown (known: %s)", h, holeEnv, strings.Join(names, ", "))
}
