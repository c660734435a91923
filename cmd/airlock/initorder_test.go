package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestInitRunsEarly checks the property the sandbox's start-up speed rests
// on (sandbox/internal/initproc's package doc): in this binary, the
// package holding the sandbox's init is initialised before the heavy
// libraries (cgroups, images, YAML, JSON Schema) and airlock's own
// packages that use them, so a re-executed init skips their initialisers.
// The quick client of session exec (holder/quick) must come earlier
// still: before the sandbox's init package, encoding/json and the crypto
// the audit log needs. It reads the order from the Go runtime's own trace
// (GODEBUG=inittrace=1) of this test binary, which links what the airlock
// binary links.
func TestInitRunsEarly(t *testing.T) {
	var order []string
	for _, in := range initTrace(t) {
		order = append(order, in.pkg)
	}
	const initproc = "github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	heavy := []string{
		"github.com/containerd/cgroups/v3/cgroup1/stats",
		"github.com/opencontainers/go-digest",
		"github.com/google/go-containerregistry/pkg/name",
		"github.com/klauspost/compress/zstd",
		"go.yaml.in/yaml/v3",
		"github.com/santhosh-tekuri/jsonschema/v6",
		"github.com/spf13/cobra",
		"github.com/airlock-sandbox/airlock/limits",
		"github.com/airlock-sandbox/airlock/policy",
		"github.com/airlock-sandbox/airlock/sandbox",
	}
	checkEarly(t, order, initproc, heavy)
	checkEarly(t, order, "github.com/airlock-sandbox/airlock/holder/quick",
		append(heavy, initproc, "encoding/json", "crypto/ed25519", "crypto/sha256"))
}

// checkEarly fails t unless pkg is initialised before every package of
// later that has an initialiser of its own (at least four must).
func checkEarly(t *testing.T, order []string, pkg string, later []string) {
	t.Helper()
	at := slices.Index(order, pkg)
	if at < 0 {
		t.Fatalf("%s is not in the init trace:\n%s", pkg, strings.Join(order, "\n"))
	}
	seen := 0
	for _, h := range later {
		i := slices.Index(order, h)
		if i < 0 {
			continue // no initialiser of its own in this build
		}
		seen++
		if i < at {
			t.Errorf("%s is initialised before %s (%d < %d): something %[2]s imports now sorts late or depends on it", h, pkg, i, at)
		}
	}
	if seen < 4 {
		t.Fatalf("only %d of the packages that must follow %s are in the init trace; the check checks nothing:\n%s", seen, pkg, strings.Join(order, "\n"))
	}
	t.Logf("%s is initialised %d-th of %d; %d of the packages checked after it", pkg, at+1, len(order), seen)
}

// TestOwnInitialisersSmall: airlock's own package initialisers allocate
// little, since every command (and every quick client) pays them at start
// whatever it runs (issue 15, docs/sandbox.md "Speed"): a table or a
// compiled pattern that only some commands use is built on first use
// instead. egress is the exception: its always-blocked floor is in every
// run's and every proxy's gate. It counts allocations, which do not
// depend on the machine's load, in the Go runtime's trace of this test
// binary, which links what the airlock binary links.
func TestOwnInitialisersSmall(t *testing.T) {
	const most = 100
	seen := 0
	for _, in := range initTrace(t) {
		if !strings.HasPrefix(in.pkg, "github.com/airlock-sandbox/airlock/") || in.pkg == "github.com/airlock-sandbox/airlock/egress" {
			continue
		}
		seen++
		if in.allocs > most {
			t.Errorf("%s's initialiser makes %d allocations (at most %d): build what it builds on first use", in.pkg, in.allocs, most)
		}
	}
	if seen < 10 {
		t.Fatalf("only %d of airlock's packages are in the init trace: the check checks nothing", seen)
	}
}

// initRecord is one line of the runtime's init trace: a package and how
// many allocations its initialiser made.
type initRecord struct {
	pkg    string
	allocs int
}

// initTrace runs this test binary with GODEBUG=inittrace=1 and returns
// its packages' initialisers in the order they ran.
func initTrace(t *testing.T) []initRecord {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.Bytes())
	}
	// init PKG @T ms, C ms clock, B bytes, A allocs
	var out []initRecord
	for _, line := range strings.Split(stderr.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("init trace line %q: %v", line, err)
		}
		out = append(out, initRecord{pkg: f[1], allocs: n})
	}
	return out
}
