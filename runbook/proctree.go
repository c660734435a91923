package runbook

import (
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// macUnchecked are the escape checks of a Linux launch that have no
// mechanism on macOS, under the "require" name of the control each
// reads. seatbelt.Controls rates none of them strong, so a policy that
// requires one fails closed before the launch (sandbox.ErrRequirement).
var macUnchecked = []struct{ Require, Check string }{
	{"pidns", "the processes of the sandbox's pid namespace (the teardown's residue)"},
	{"cgroup", "processes moved out of the sandbox's cgroup (" + SignalCgroup + ")"},
	{"netns", "the host's network namespaces (the evidence's host-netns.json)"},
}

// macEscapeChecks is the receipt's "runbook" line on macOS: the checks a
// launch makes there, and those it cannot, by name.
func macEscapeChecks() string {
	var not []string
	for _, u := range macUnchecked {
		not = append(not, u.Check+" ["+u.Require+"]")
	}
	return "start-up probes inside the sandbox; escape checks after every step (audit chain, processes of the step left after it, host writes, probes again) and during it (canary, metadata); " +
		"not available on macOS: " + strings.Join(not, "; ")
}

// descendantsOf returns the processes of procs descended from root
// (airlock itself, on macOS, whose only children are the steps' and the
// probes' commands), however deep; a parent loop ends the walk.
func descendantsOf(procs []seatbelt.Proc, root int) []seatbelt.Proc {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.Pid] = p.Ppid
	}
	var out []seatbelt.Proc
	for _, p := range procs {
		for q, hops := p.Ppid, 0; q > 1 && q != p.Pid && hops <= len(procs); q, hops = parent[q], hops+1 {
			if q == root {
				out = append(out, p)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

// leftBehind names the descendants of root in procs: after a step, every
// one should be gone (the step's watch kills its whole tree).
func leftBehind(procs []seatbelt.Proc, root int) []string {
	var out []string
	for _, p := range descendantsOf(procs, root) {
		out = append(out, fmt.Sprintf("pid %d (parent %d, process group %d) is alive after the step", p.Pid, p.Ppid, p.Pgid))
	}
	return out
}
