package initproc

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Hole is a test hole (issue 6, item 6: "each probe made to fail by a
// test-only setup option that leaves a hole open, and shown to abort"): a
// change to a sandbox's setup that leaves one control off, so that a test
// sees the start-up probe watching it fail and the start refused.
//
// airlock's own binary holds no hole and no code that skips a control:
// the holes are package sandbox/holes's, which only test files import and
// which hands them here from its initialiser (RegisterHole). Neither side
// can be talked into one in airlock's binary: the parent reads HoleEnv
// only when a hole is registered, and an init refuses to start when sent
// a hole its binary has not registered (checkHole), which in airlock's
// binary is every hole. A hole is registered after this package's
// initialiser, so the parent of one asks the init to run late (LateArg).
type Hole struct {
	// Name is how a test asks for it (HoleEnv).
	Name string
	// Root maps uid and gid 0 inside instead of SandboxID.
	Root bool
	// HostNetwork starts the init in the host's network namespace.
	HostNetwork bool
	// HostDirs are host directories the init binds read-only at the same
	// place, unchecked.
	HostDirs []string
	// Replace runs in place of the init's control of that name ("caps",
	// "no_new_privs", "landlock", "seccomp", "network").
	Replace map[string]Replacement
	// Forked runs in the init once it has forked the target, before it
	// tells the parent.
	Forked func()
}

// Replacement runs in place of one of the init's controls, with the
// control itself (to run late, or not at all) and the init's receipt.
type Replacement func(control func() error, receipt map[string]string) error

// HoleEnv names the hole a test binary's sandboxes leave open.
const HoleEnv = "AIRLOCK_TEST_HOLE"

// holes are the holes this binary knows, by name: none in airlock's own.
var holes = map[string]*Hole{}

// RegisterHole makes h known to this binary. Only package sandbox/holes
// calls it, from its initialiser.
func RegisterHole(h *Hole) { holes[h.Name] = h }

// RequestedHole returns the hole HoleEnv names: none in a binary without
// holes, whatever the environment says, and an error for a name this
// binary does not know (a misspelt hole must not make a test pass by
// opening nothing).
func RequestedHole() (*Hole, error) {
	name := os.Getenv(HoleEnv)
	if len(holes) == 0 || name == "" {
		return nil, nil
	}
	if h, ok := holes[name]; ok {
		return h, nil
	}
	known := slices.Sorted(maps.Keys(holes))
	return nil, fmt.Errorf("test hole %q (%s): unknown (known: %s)", name, HoleEnv, strings.Join(known, ", "))
}

// ID is the uid and gid inside a sandbox with hole h (nil: none).
func (h *Hole) ID() int {
	if h != nil && h.Root {
		return 0
	}
	return SandboxID
}

// checkHole finds the hole the parent sent among this binary's, refusing
// one it does not know (in airlock's own binary, any: a broken or forged
// setup), and records an open hole in the receipt.
func (s *initState) checkHole() error {
	if s.cfg.TestHole == "" {
		return nil
	}
	h, ok := holes[s.cfg.TestHole]
	if !ok {
		return fmt.Errorf("test hole %q: unknown to this binary", s.cfg.TestHole)
	}
	s.hole = h
	s.receipt["test_hole"] = h.Name + ": left open on purpose by a test"
	return nil
}

// control runs the init's control name (run), or what the test hole put
// in its place.
func (s *initState) control(name string, run func() error) error {
	if s.hole != nil && s.hole.Replace[name] != nil {
		return s.hole.Replace[name](run, s.receipt)
	}
	return run()
}
