package runbook

import (
	"fmt"
	"os"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// procInfo is one process of the sandbox, as kern.proc gives it.
type procInfo = seatbelt.Proc

// sandboxProcs finds the sandbox's processes on macOS, which has no pid
// namespace and no cgroup: they are airlock's descendants (each step's
// command and what it started, which the step's watch follows and kills;
// nothing of the sandbox runs between steps). A process that leaves its
// group and loses its parent between two reads of the watch is found by
// neither (docs/sandbox.md, "macOS").
type sandboxProcs struct{ self int }

// escapeChecks is the receipt's "runbook" line.
var escapeChecks = macEscapeChecks()

func newSandboxProcs(int) (*sandboxProcs, error) {
	if _, err := seatbelt.UserProcs(); err != nil {
		return nil, fmt.Errorf("runbook: the process table: %w", err)
	}
	return &sandboxProcs{self: os.Getpid()}, nil
}

// afterStep names the processes of the sandbox still alive after a step,
// and what could not be read.
func (s *sandboxProcs) afterStep() []string {
	procs, err := seatbelt.UserProcs()
	if err != nil {
		return []string{"the process table could not be read: " + err.Error()}
	}
	return leftBehind(procs, s.self)
}

// left returns the processes of the sandbox alive after the teardown.
func (s *sandboxProcs) left() map[int]string {
	out := map[int]string{}
	for _, p := range s.tree() {
		out[p.Pid] = "descendant"
	}
	return out
}

// outsideCgroup finds nothing: macOS has no cgroups (macUnchecked).
func (s *sandboxProcs) outsideCgroup() []string { return nil }

// tree returns airlock's descendants, for the evidence.
func (s *sandboxProcs) tree() []procInfo {
	procs, _ := seatbelt.UserProcs()
	return descendantsOf(procs, s.self)
}

// hostNetNamespaces finds nothing: macOS has no network namespaces.
func hostNetNamespaces() map[string][]int { return nil }
