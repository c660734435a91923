package initproc

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc/internal/sources"
)

// TestSourceDigestCurrent recomputes the digest of the init's sources and
// fails when the committed one is stale: every change to a file the init
// links (this package, seccomp, hostpath, ...) or to the version of a
// module it links must be regenerated, or a parent would take an
// airlock-init of the old sources for one of its own build.
func TestSourceDigestCurrent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on $PATH")
	}
	d, err := sources.Digest("../../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(sources.File)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, sources.Render(d)) {
		t.Errorf("%s is stale (the sources now digest to %s, it says %s): run go generate ./sandbox/internal/initproc", sources.File, d, SourceDigest)
	}
}
