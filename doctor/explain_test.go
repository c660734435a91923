package doctor

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
)

// expect checks one control of a report: its strength, and that its
// detail and fix contain the given phrases.
type expect struct {
	name     string
	strength Strength
	detail   []string
	fix      []string
}

func check(t *testing.T, r Report, exps ...expect) {
	t.Helper()
	for _, e := range exps {
		c, ok := r.Control(e.name)
		if !ok {
			t.Errorf("%s: not in the report", e.name)
			continue
		}
		if c.Strength != e.strength {
			t.Errorf("%s: strength %s, want %s (mechanism %q, detail %q)", e.name, c.Strength, e.strength, c.Mechanism, c.Detail)
		}
		for _, s := range e.detail {
			if !strings.Contains(c.Detail, s) {
				t.Errorf("%s: detail %q lacks %q", e.name, c.Detail, s)
			}
		}
		for _, s := range e.fix {
			if !strings.Contains(c.Fix, s) {
				t.Errorf("%s: fix %q lacks %q", e.name, c.Fix, s)
			}
		}
		if c.Strength != Strong && c.Detail == "" {
			t.Errorf("%s: %s without an explanation", e.name, c.Strength)
		}
		if c.Mechanism == "" {
			t.Errorf("%s: no mechanism", e.name)
		}
	}
}

func TestHealthyHost(t *testing.T) {
	for _, euid := range []int{0, 1000} {
		p, sp := fakeHost(euid)
		if euid != 0 {
			p.Cgroups = func() limits.HostInfo {
				return limits.HostInfo{Mode: limits.ModeV2, UnifiedMount: "/sys/fs/cgroup", CgroupKill: true, Delegated: true,
					Controllers: []limits.Controller{{Name: "memory", Version: 2, File: "memory.max", Usable: true},
						{Name: "pids", Version: 2, File: "pids.max", Usable: true}, {Name: "cpu", Version: 2, File: "cpu.stat", Usable: true},
						{Name: "freezer", Version: 2, File: "cgroup.freeze", Usable: true}}}
			}
		}
		r := CheckWith(context.Background(), p)
		for _, c := range r.Controls {
			if c.Strength != Strong {
				t.Errorf("uid %d: %s is %s on a healthy host: %s", euid, c.Name, c.Strength, c.Detail)
			}
			if c.Fix != "" {
				t.Errorf("uid %d: %s has a fix on a healthy host: %s", euid, c.Name, c.Fix)
			}
		}
		if got := len(sp.calls); got != 2 {
			t.Errorf("uid %d: %d children spawned, want 2 (userns, then every namespace at once): %v", euid, got, sp.calls)
		}
		if r.Host.Kernel != "6.18.4" || r.Host.Root != (euid == 0) || r.Host.UID != euid {
			t.Errorf("uid %d: host %+v", euid, r.Host)
		}
	}
}

// TestSupplementaryGroups: a rootless caller in supplementary groups is
// reported with the refusal and its ways out, unless newgidmap and a
// subordinate range can drop them.
func TestSupplementaryGroups(t *testing.T) {
	p, _ := fakeHost(1000)
	p.Groups = func() (idmap.Groups, error) { return idmap.Groups{Extra: []int{42}, User: "agent"}, nil }
	c, _ := CheckWith(context.Background(), p).Control(ControlPrivileges)
	if c.Strength != Missing || !strings.Contains(c.Detail, "supplementary groups [42]") || !strings.Contains(c.Fix, "setpriv --clear-groups") {
		t.Errorf("groups that cannot be dropped: %+v", c)
	}
	p.Groups = func() (idmap.Groups, error) {
		return idmap.Groups{Extra: []int{42}, User: "agent", NewGIDMap: "/usr/bin/newgidmap", SubGID: 100000, Range: true}, nil
	}
	c, _ = CheckWith(context.Background(), p).Control(ControlPrivileges)
	if c.Strength != Strong || !strings.Contains(c.Detail, "dropped inside (newgidmap") || c.Fix != "" {
		t.Errorf("groups that can be dropped: %+v", c)
	}
}

func TestUbuntuAppArmorRestrictsUserNamespaces(t *testing.T) {
	p, sp := fakeHost(1000)
	setFile(p, "proc/sys/kernel/apparmor_restrict_unprivileged_userns", ptr("1\n"))
	sp.fail = failWith("user", syscall.EPERM)
	r := CheckWith(context.Background(), p)
	check(t, r,
		expect{name: RequireUserNS, strength: Missing,
			detail: []string{"operation not permitted", "kernel.apparmor_restrict_unprivileged_userns=1", "Ubuntu", "24.04", "strips every capability"},
			fix: []string{"/etc/apparmor.d/airlock", "profile airlock /opt/airlock/bin/airlock flags=(unconfined)", "userns,",
				"apparmor_parser -r", "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0", "as root"}},
		expect{name: RequireNetNS, strength: Missing, detail: []string{"needs a user namespace"}, fix: []string{"apparmor_parser"}},
		expect{name: RequirePivotRoot, strength: Missing, detail: []string{"see mountns"}},
		expect{name: RequireEgressProxy, strength: Weak, detail: []string{"ignores HTTP_PROXY"}},
		expect{name: RequireSeccomp, strength: Strong},
	)
	if len(sp.calls) != 1 {
		t.Errorf("after the user namespace failed, %d more children were spawned: %v", len(sp.calls)-1, sp.calls[1:])
	}
}

func TestRootSeesUnprivilegedRestriction(t *testing.T) {
	p, _ := fakeHost(0)
	setFile(p, "proc/sys/kernel/apparmor_restrict_unprivileged_userns", ptr("1"))
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireUserNS, strength: Strong, detail: []string{"unprivileged users cannot", "apparmor_restrict_unprivileged_userns=1"}})
}

func TestDebianUnprivilegedUsernsClone(t *testing.T) {
	p, sp := fakeHost(1000)
	setFile(p, "proc/sys/kernel/unprivileged_userns_clone", ptr("0"))
	sp.fail = failWith("user", syscall.EPERM)
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireUserNS, strength: Missing, detail: []string{"kernel.unprivileged_userns_clone=0"},
			fix: []string{"sysctl -w kernel.unprivileged_userns_clone=1", "/etc/sysctl.d/"}})
}

func TestMaxUserNamespacesZero(t *testing.T) {
	for _, euid := range []int{0, 1000} {
		p, sp := fakeHost(euid)
		setFile(p, "proc/sys/user/max_user_namespaces", ptr("0"))
		sp.fail = failWith("user", syscall.ENOSPC)
		check(t, CheckWith(context.Background(), p),
			expect{name: RequireUserNS, strength: Missing, detail: []string{"no space left on device", "user.max_user_namespaces is 0"},
				fix: []string{"sysctl -w user.max_user_namespaces=15000"}})
	}
}

// TestRootNeedsUserNamespacesToo: the sandbox's init is made in a user
// namespace of its own even for root, so without one no other namespace
// is of use to it.
func TestRootNeedsUserNamespacesToo(t *testing.T) {
	p, sp := fakeHost(0)
	setFile(p, "proc/sys/user/max_user_namespaces", ptr("0"))
	sp.fail = failWith("user", syscall.ENOSPC)
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireUserNS, strength: Missing},
		expect{name: RequireNetNS, strength: Missing, detail: []string{"user namespace of its own"}},
		expect{name: RequirePIDNS, strength: Missing},
		expect{name: RequirePivotRoot, strength: Missing})
}

func TestKernelWithoutUserNamespaces(t *testing.T) {
	p, _ := fakeHost(1000)
	setFile(p, "proc/self/ns/user", nil)
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireUserNS, strength: Missing, detail: []string{"/proc/self/ns/user is absent"}, fix: []string{"CONFIG_USER_NS=y"}},
		expect{name: RequireMountNS, strength: Missing})
}

func TestContainerSeccompRefusesNamespaces(t *testing.T) {
	p, sp := fakeHost(0)
	setFile(p, "proc/self/status", ptr("Seccomp:\t2\nSeccomp_filters:\t1\nNoNewPrivs:\t1\n"))
	sp.fail = failWith("net", syscall.EPERM)
	r := CheckWith(context.Background(), p)
	check(t, r,
		expect{name: RequireUserNS, strength: Strong},
		expect{name: RequireNetNS, strength: Missing, detail: []string{"creating a net namespace failed", "seccomp filter"}, fix: []string{"container"}},
		expect{name: RequirePIDNS, strength: Strong},
		expect{name: RequireSeccomp, strength: Strong, detail: []string{"seccomp mode 2 with 1 filter(s)", "stacks"}},
		expect{name: RequireEgressProxy, strength: Weak, detail: []string{"listens on the proxy's port"}})
	sp.fail = func(ns []string) error { return syscall.EPERM }
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireUserNS, strength: Missing, detail: []string{"already runs under a seccomp filter"}},
		expect{name: RequireNetNS, strength: Missing, detail: []string{"user namespace of its own"}},
		expect{name: RequireEgressProxy, strength: Weak, detail: []string{"ignores HTTP_PROXY"}})
}

func TestOldKernelWithoutLandlock(t *testing.T) {
	p, _ := fakeHost(0)
	p.LandlockABI = func() (int, error) { return 0, syscall.ENOSYS }
	setFile(p, "sys/kernel/security/lsm", ptr("lockdown,capability,yama,apparmor"))
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireLandlock, strength: Missing,
			detail: []string{"no Landlock", "Linux 5.13", "active LSMs: lockdown,capability,yama,apparmor"},
			fix:    []string{"Linux 5.13", "CONFIG_SECURITY_LANDLOCK=y"}},
		expect{name: RequireLandlockNet, strength: Missing},
		expect{name: RequireLandlockScope, strength: Missing})
}

func TestLandlockNotEnabledAtBoot(t *testing.T) {
	p, _ := fakeHost(0)
	p.LandlockABI = func() (int, error) { return 0, syscall.EOPNOTSUPP }
	setFile(p, "sys/kernel/security/lsm", ptr("lockdown,capability,yama,apparmor\n"))
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireLandlock, strength: Missing, detail: []string{"not enabled at boot"},
			fix: []string{"lsm=landlock,lockdown,capability,yama,apparmor"}})

	setFile(p, "sys/kernel/security/lsm", nil) // securityfs not mounted
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireLandlock, strength: Missing, detail: []string{"securityfs is not mounted"}, fix: []string{"lsm=landlock,"}})
}

func TestLandlockOldABI(t *testing.T) {
	p, _ := fakeHost(0)
	p.LandlockABI = func() (int, error) { return 3, nil }
	r := CheckWith(context.Background(), p)
	check(t, r,
		expect{name: RequireLandlock, strength: Strong, detail: []string{"filesystem access rights", "truncation"}},
		expect{name: RequireLandlockNet, strength: Missing, detail: []string{"ABI 4 (Linux 6.7)", "ABI 3", "network namespace still"}, fix: []string{"6.7"}},
		expect{name: RequireLandlockScope, strength: Missing, detail: []string{"ABI 6 (Linux 6.12)"}})
	if c, _ := r.Control(RequireLandlock); c.Mechanism != "Landlock ABI 3" || strings.Contains(c.Detail, "TCP") {
		t.Errorf("landlock at ABI 3: %+v", c)
	}
}

func TestNoCgroupDelegation(t *testing.T) {
	p, _ := fakeHost(1000) // v1 hybrid, nothing writable
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireCgroup, strength: Weak, detail: []string{"permission denied"}, fix: []string{"run airlock as root", "systemd.unified_cgroup_hierarchy=1"}},
		expect{name: RequireCgroupMemory, strength: Weak, detail: []string{"RLIMIT_DATA", "hybrid"}, fix: []string{"cgroup v1 cannot be delegated"}},
		expect{name: RequireCgroupPids, strength: Weak, detail: []string{"RLIMIT_NPROC"}},
		expect{name: RequireCgroupCPU, strength: Weak, detail: []string{"RLIMIT_CPU"}})

	p.Cgroups = func() limits.HostInfo {
		return limits.HostInfo{Mode: limits.ModeV2, UnifiedMount: "/sys/fs/cgroup", Controllers: []limits.Controller{
			{Name: "memory", Version: 2, File: "memory.max", Why: "/sys/fs/cgroup/user.slice: permission denied"},
		}}
	}
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireCgroupMemory, strength: Weak, detail: []string{"user.slice: permission denied", "v2 at /sys/fs/cgroup"},
			fix: []string{"Delegate=memory pids cpu", "systemd-run --user --scope -p Delegate=yes"}},
		expect{name: RequireCgroupPids, strength: Weak, detail: []string{"not mounted"}, fix: []string{"CONFIG_CGROUP_PIDS"}})
}

func TestNoCgroupsMounted(t *testing.T) {
	p, _ := fakeHost(0)
	p.Cgroups = func() limits.HostInfo {
		return limits.HostInfo{Mode: limits.ModeNone, Notes: []string{"no cgroup hierarchy is mounted"}}
	}
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireCgroup, strength: Weak, detail: []string{"none mounted (no cgroup hierarchy is mounted)"}},
		expect{name: RequireCgroupMemory, strength: Weak, fix: []string{"mount the cgroup hierarchies"}})
}

func TestInitramfsRoot(t *testing.T) {
	p, _ := fakeHost(0)
	setFile(p, "proc/self/mountinfo", ptr("1 0 0:2 / / rw shared:1 - rootfs rootfs rw\n"))
	check(t, CheckWith(context.Background(), p),
		expect{name: RequirePivotRoot, strength: Missing, detail: []string{"initramfs", "EINVAL"}, fix: []string{"switch_root"}})

	// A real root mounted over the initramfs is the one that counts.
	setFile(p, "proc/self/mountinfo", ptr("1 0 0:2 / / rw - rootfs rootfs rw\n22 1 254:0 / / rw - ext4 /dev/vda rw\n"))
	check(t, CheckWith(context.Background(), p), expect{name: RequirePivotRoot, strength: Strong})
}

func TestNoSeccomp(t *testing.T) {
	p, _ := fakeHost(0)
	p.SeccompFilter = func() bool { return false }
	setFile(p, "proc/self/status", ptr("Name:\tairlock\n"))
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireSeccomp, strength: Missing, detail: []string{"no seccomp"}, fix: []string{"CONFIG_SECCOMP=y"}},
		expect{name: RequireNoNewPrivs, strength: Missing})

	setFile(p, "proc/self/status", ptr("Seccomp:\t0\nNoNewPrivs:\t0\n"))
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireSeccomp, strength: Missing, detail: []string{"KILL_PROCESS (Linux 4.14)"}, fix: []string{"4.14"}},
		expect{name: RequireNoNewPrivs, strength: Strong})
}

func TestOpenFiles(t *testing.T) {
	p, _ := fakeHost(0)
	check(t, CheckWith(context.Background(), p),
		expect{name: "open-files", strength: Strong, detail: []string{"above 20000 cannot be granted", "CAP_SYS_RESOURCE is not in the bounding set"}})
	setFile(p, "proc/self/status", ptr("CapBnd:\t000001ffffffffff\n"))
	c, _ := CheckWith(context.Background(), p).Control("open-files")
	if strings.Contains(c.Detail, "CAP_SYS_RESOURCE") {
		t.Errorf("open-files with CAP_SYS_RESOURCE in the bounding set: %q", c.Detail)
	}
}

func TestNotLinux(t *testing.T) {
	p, _ := fakeHost(501)
	p.OS = "freebsd"
	r := CheckWith(context.Background(), p)
	for _, name := range RequirementNames() {
		want := Missing
		switch name {
		case RequireEgressProxy:
			want = Weak
		case RequirePrivileges:
			continue // who the sandbox would run as: a fact, on any system
		}
		check(t, r, expect{name: name, strength: want})
	}
	for _, c := range r.Controls {
		if !IsRequirement(c.Name) {
			t.Errorf("control %q is reported but a policy cannot require it", c.Name)
		}
	}
	if c, _ := r.Control(RequireSeccomp); !strings.Contains(c.Detail, "freebsd") {
		t.Errorf("seccomp on freebsd: %q", c.Detail)
	}
}

// TestEveryRequirementIsReported keeps RequirementNames and the report in
// step: a name no control answers could never be satisfied.
func TestEveryRequirementIsReported(t *testing.T) {
	p, _ := fakeHost(0)
	r := CheckWith(context.Background(), p)
	for _, n := range RequirementNames() {
		if _, ok := r.Control(n); !ok {
			t.Errorf("requirement %q has no control in the report", n)
		}
	}
	seen := map[string]bool{}
	for _, c := range r.Controls {
		if !IsRequirement(c.Name) {
			t.Errorf("control %q is reported but a policy cannot require it (docs/policy.md, require)", c.Name)
		}
		if seen[c.Name] {
			t.Errorf("control %q reported twice", c.Name)
		}
		seen[c.Name] = true
	}
	for _, n := range limits.RequireNames {
		if !IsRequirement(n) {
			t.Errorf("limits answers require name %q, which the doctor does not know", n)
		}
	}
}
