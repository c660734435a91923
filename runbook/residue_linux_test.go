package runbook_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// tracker records, through the test hooks, what a launch made on the
// host, so that the test can check afterwards that none of it is left.
type tracker struct {
	mu         sync.Mutex
	pidNS      string
	canaryDir  string
	canaryAddr string
}

// track installs the hooks that feed t.
func (tr *tracker) track(o *runbook.Options, then func(step, initPid int)) {
	runbook.SetConfig(o, func(_ *sandbox.Config, canaryDir, canaryAddr string) {
		tr.mu.Lock()
		tr.canaryDir, tr.canaryAddr = canaryDir, canaryAddr
		tr.mu.Unlock()
	})
	runbook.SetAfterStep(o, func(step, pid int) {
		tr.mu.Lock()
		if tr.pidNS == "" {
			tr.pidNS, _ = os.Readlink("/proc/" + itoa(pid) + "/ns/pid")
		}
		tr.mu.Unlock()
		if then != nil {
			then(step, pid)
		}
	})
}

// checkNoResidue fails the test if anything of the launch is left on the
// host: a process of its pid namespace, a cgroup named for its run, a
// mount of its paths in the host's table, its canary directory.
func (tr *tracker) checkNoResidue(t *testing.T, runID string, paths ...string) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.pidNS == "" {
		t.Fatal("the launch never reached a step: nothing to check")
	}
	testutil.CheckNoProcessIn(t, tr.pidNS)
	testutil.CheckNoCgroupLeft(t, runID)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := f[4]
		bad := mp == sandbox.WorkspaceDir || mp == sandbox.FindingsDir || strings.HasPrefix(mp, "/.airlock") || strings.Contains(line, runID)
		for _, p := range paths {
			bad = bad || mp == p || strings.HasPrefix(mp, p+"/")
		}
		if bad {
			t.Errorf("mount left in the host's table: %s", line)
		}
	}
	if tr.canaryDir == "" {
		t.Error("no canary directory was made")
	} else if _, err := os.Lstat(tr.canaryDir); err == nil {
		t.Errorf("canary directory %s left behind", tr.canaryDir)
	}
}
