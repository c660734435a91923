package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// childEnv makes the test binary print Check's report and exit (see
// TestMain), so that a root test can run the doctor as another user.
const childEnv = "AIRLOCK_DOCTOR_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "report" {
		if err := json.NewEncoder(os.Stdout).Encode(Check(context.Background())); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestThisHostAsRoot checks the report against the facts PLATFORM.md
// lists for these hosts: every namespace, seccomp, Landlock (ABI 7),
// hybrid cgroups with v1 memory, pids, cpuacct and freezer, and an
// open-files hard limit that root cannot raise.
func TestThisHostAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	r := Check(context.Background())
	if !r.Host.Root || r.Host.UID != 0 || r.Host.OS != "linux" || r.Host.Kernel == "" {
		t.Errorf("host = %+v", r.Host)
	}
	for _, n := range RequirementNames() {
		check(t, r, expect{name: n, strength: Strong})
	}
	check(t, r,
		expect{name: "privileges", strength: Strong},
		expect{name: RequireCgroupMemory, strength: Strong, detail: []string{"hybrid"}},
		expect{name: "open-files", strength: Strong, detail: []string{"CAP_SYS_RESOURCE is not in the bounding set"}},
	)
	mech := func(name string) string { c, _ := r.Control(name); return c.Mechanism }
	for name, want := range map[string]string{
		RequireCgroupMemory: "cgroup v1 memory.limit_in_bytes",
		RequireCgroupPids:   "cgroup v1 pids.max",
		RequireCgroupCPU:    "cgroup v1 cpuacct.usage",
		RequireSeccomp:      seccomp.Describe(),
		RequireNetNS:        "net namespace (CLONE_NEWNET)",
	} {
		if got := mech(name); got != want {
			t.Errorf("%s: mechanism %q, want %q", name, got, want)
		}
	}
	var abi int
	if _, err := fmt.Sscanf(mech(RequireLandlock), "Landlock ABI %d", &abi); err != nil || abi < 1 {
		t.Errorf("landlock mechanism %q: want Landlock ABI >= 1", mech(RequireLandlock))
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("RLIMIT_NOFILE (hard limit %d)", lim.Max); mech("open-files") != want {
		t.Errorf("open-files: %q, want %q", mech("open-files"), want)
	}
}

// TestThisHostUnprivileged runs the doctor as uid 65534: user namespaces
// and everything built on them work rootless here; the v1 cgroups are not
// delegated, so the caps fall back to rlimits, with the fix.
func TestThisHostUnprivileged(t *testing.T) {
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, childEnv+"=report"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("doctor as nobody: %v\n%s", err, stderr.Bytes())
	}
	var r Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	if r.Host.Root || r.Host.UID != testutil.NobodyID {
		t.Errorf("host = %+v", r.Host)
	}
	check(t, r,
		expect{name: "privileges", strength: Strong},
		expect{name: RequireUserNS, strength: Strong},
		expect{name: RequireNetNS, strength: Strong},
		expect{name: RequirePIDNS, strength: Strong},
		expect{name: RequireMountNS, strength: Strong},
		expect{name: RequirePivotRoot, strength: Strong},
		expect{name: RequireSeccomp, strength: Strong},
		expect{name: RequireLandlock, strength: Strong},
		expect{name: RequireEgressProxy, strength: Strong},
		expect{name: RequireCgroup, strength: Weak, detail: []string{"permission denied"}},
		expect{name: RequireCgroupMemory, strength: Weak, detail: []string{"RLIMIT_DATA", "hybrid"}, fix: []string{"cgroup v1 cannot be delegated"}},
		expect{name: RequireCgroupPids, strength: Weak, fix: []string{"run airlock as root"}},
	)
	if c, _ := r.Control("privileges"); !strings.Contains(c.Mechanism, "uid 65534") {
		t.Errorf("privileges: %q", c.Mechanism)
	}
	unmet := Satisfies(r, []string{RequireSeccomp, RequireCgroupMemory})
	if len(unmet) != 1 || unmet[0].Name != RequireCgroupMemory {
		t.Errorf("Satisfies as nobody: %+v", unmet)
	}
}

// BenchmarkCheck times a full doctor run on this host (two children in
// new namespaces, the /proc and /sys readings, the cgroup detection).
func BenchmarkCheck(b *testing.B) {
	for b.Loop() {
		Check(context.Background())
	}
}
