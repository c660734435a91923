package doctor

import (
	"context"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestSatisfies(t *testing.T) {
	p, sp := fakeHost(1000) // no cgroup delegation
	sp.fail = failWith("user", syscall.EPERM)
	setFile(p, "proc/sys/kernel/apparmor_restrict_unprivileged_userns", ptr("1"))
	p.LandlockABI = func() (int, error) { return 3, nil }
	r := CheckWith(context.Background(), p)

	got := Satisfies(r, []string{"seccomp", "landlock", "landlock-net", "cgroup-memory", "userns", "no-such-thing"})
	want := []struct {
		name     string
		strength Strength
		reason   string
		fix      string
	}{
		{"landlock-net", Missing, "policy requires landlock-net; this host does not have it: TCP rules need Landlock ABI 4", "6.7"},
		{"cgroup-memory", Weak, "policy requires cgroup-memory; this host enforces it only weakly, by RLIMIT_DATA per process (fallback): no usable memory controller", "cgroup v1"},
		{"userns", Missing, "policy requires userns; this host does not have it: creating a user namespace failed", "apparmor"},
		{"no-such-thing", "", `policy requires "no-such-thing", which is not a control airlock knows`, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("Satisfies returned %d unmet requirements, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Strength != w.strength || !strings.HasPrefix(g.Reason, w.reason) || !strings.Contains(g.Fix, w.fix) {
			t.Errorf("unmet[%d] = %+v\nwant name %s, strength %s, reason starting %q, fix containing %q", i, g, w.name, w.strength, w.reason, w.fix)
		}
	}
	if got := Satisfies(r, []string{"seccomp", "landlock", "no-new-privs"}); got != nil {
		t.Errorf("met requirements reported unmet: %+v", got)
	}
	if got := Satisfies(r, nil); got != nil {
		t.Errorf("no requirements reported unmet: %+v", got)
	}
}

func TestRequirementNames(t *testing.T) {
	names := RequirementNames()
	want := []string{"privileges", "userns", "pidns", "mountns", "netns", "ipcns", "utsns", "cgroupns", "pivot-root",
		"no-new-privs", "seccomp", "landlock", "landlock-net", "landlock-scope",
		"cgroup", "cgroup-memory", "cgroup-pids", "cgroup-cpu", "open-files", "egress-proxy", "procfs"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("RequirementNames() = %q\nwant %q", names, want)
	}
	names[0] = "changed"
	if RequirementNames()[0] != "privileges" {
		t.Error("RequirementNames returns the package's own slice")
	}
	for _, n := range []string{"", "USERNS", "open_files"} {
		if IsRequirement(n) {
			t.Errorf("IsRequirement(%q) = true", n)
		}
	}
}
