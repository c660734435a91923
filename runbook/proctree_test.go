package runbook

import (
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

func TestDescendantsOf(t *testing.T) {
	const self = 100
	procs := []seatbelt.Proc{
		{Pid: 1, Ppid: 0, Pgid: 1},        // launchd
		{Pid: 50, Ppid: 1, Pgid: 50},      // the user's shell
		{Pid: self, Ppid: 50, Pgid: self}, // airlock
		{Pid: 101, Ppid: 50, Pgid: self},  // airlock's job-mate (| jq): not its
		{Pid: 200, Ppid: self, Pgid: 200}, // a step's command
		{Pid: 201, Ppid: 200, Pgid: 200},
		{Pid: 202, Ppid: 201, Pgid: 300}, // deeper, in a group of its own
		{Pid: 300, Ppid: 1, Pgid: 300},   // orphaned to launchd: not found
		{Pid: 400, Ppid: 401, Pgid: 400}, // a parent loop, not airlock's
		{Pid: 401, Ppid: 400, Pgid: 400},
		{Pid: 500, Ppid: 999, Pgid: 500}, // a parent not in the table
	}
	var got []int
	for _, p := range descendantsOf(procs, self) {
		got = append(got, p.Pid)
	}
	if want := []int{200, 201, 202}; !reflect.DeepEqual(got, want) {
		t.Errorf("descendants of %d = %v, want %v", self, got, want)
	}
	left := leftBehind(procs, self)
	if len(left) != 3 || left[2] != "pid 202 (parent 201, process group 300) is alive after the step" {
		t.Errorf("leftBehind = %q", left)
	}
	if left := leftBehind(procs[:4], self); left != nil {
		t.Errorf("nothing of airlock's left, yet leftBehind = %q", left)
	}
}

// TestMacUncheckedFailClosed: every escape check a launch on macOS cannot
// make is named in its receipt, under a control that macOS does not rate
// strong, so that a policy requiring it is refused before the launch.
func TestMacUncheckedFailClosed(t *testing.T) {
	strength := map[string]string{}
	for _, c := range seatbelt.Controls() {
		strength[c.Name] = c.Strength
	}
	receipt := macEscapeChecks()
	for _, u := range macUnchecked {
		if s, ok := strength[u.Require]; !ok || s == seatbelt.Strong {
			t.Errorf("%s: control %q is %q on macOS: a policy requiring it would not fail closed", u.Check, u.Require, s)
		}
		if !strings.Contains(receipt, u.Check+" ["+u.Require+"]") {
			t.Errorf("the macOS receipt does not name %q: %s", u.Check, receipt)
		}
	}
	if len(macUnchecked) == 0 || !strings.Contains(receipt, "not available on macOS: ") {
		t.Errorf("the macOS receipt names no missing check: %s", receipt)
	}
}
