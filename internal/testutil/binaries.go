package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the airlock and airlock-init binaries of this test binary,
// built once (Binaries) and removed by RemoveBinaries.
var built struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// Binaries builds cmd/airlock and cmd/airlock-init once per test binary
// into one directory and returns it: airlock runs airlock-init from
// beside itself as each sandbox's init (docs/sandbox.md, "The small
// init"). They are built without the race detector and without cgo (a
// -race binary's ThreadSanitizer cannot live under a sandbox's memory and
// descriptor caps), in a 0755 directory that uid 65534 can reach. Call
// RemoveBinaries from TestMain after the tests.
func Binaries(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "airlock-test-bin-"); built.err != nil {
			return
		}
		if built.err = os.Chmod(built.dir, 0o755); built.err != nil {
			return
		}
		built.out, built.err = staticBuild(built.dir+"/",
			"github.com/airlock-sandbox/airlock/cmd/airlock", "github.com/airlock-sandbox/airlock/cmd/airlock-init")
	})
	if built.err != nil {
		t.Fatalf("build airlock: %v\n%s", built.err, built.out)
	}
	return built.dir
}

// staticBuild builds the packages pkgs without cgo to out (a directory
// if it ends in "/"), and returns go build's output.
func staticBuild(out string, pkgs ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"build", "-o", out}, pkgs...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd.CombinedOutput()
}

// Airlock is the airlock binary that Binaries built, airlock-init beside it.
func Airlock(t testing.TB) string { return filepath.Join(Binaries(t), "airlock") }

// RemoveBinaries removes what Binaries built, if anything.
func RemoveBinaries() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
