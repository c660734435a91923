package doctor

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestPodmanContainer plays what a podman container leaves airlock here
// (measured: docs/sandbox.md, "Inside a container"): every namespace, a
// seccomp filter already on the process, and a /proc with masked paths
// that refuses a fresh one.
func TestPodmanContainer(t *testing.T) {
	p, _ := fakeHost(0)
	setFile(p, "run/.containerenv", ptr(""))
	setFile(p, "proc/self/status", ptr("Name:\tairlock\nSeccomp:\t2\nSeccomp_filters:\t1\n"))
	p.Proc = func(context.Context) error { return errProcRefused }
	r := CheckWith(context.Background(), p)
	if r.Host.Container != "podman (/run/.containerenv)" {
		t.Errorf("container = %q", r.Host.Container)
	}
	check(t, r,
		expect{name: RequireProcFS, strength: Weak, detail: []string{"refused", "lists the host's processes", "Landlock"},
			fix: []string{"unmask=/proc/*", "procMount: Unmasked"}},
		expect{name: RequireSeccomp, strength: Strong, detail: []string{"already runs under seccomp mode 2", "stacks"}},
		expect{name: RequireNetNS, strength: Strong},
		expect{name: RequireEgressProxy, strength: Strong},
	)
	p.LandlockABI = func() (int, error) { return 0, errors.New("landlock: not enabled") }
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireProcFS, strength: Missing, detail: []string{"without Landlock", "refuses"}})
	p.SeccompStack = func(context.Context) error { return errors.New("seccomp: install filter: operation not permitted") }
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireSeccomp, strength: Missing, detail: []string{"installing airlock's filters in a child failed"}})
}

// TestNoNetworkNamespace plays a container whose profile refuses network
// namespaces: with Landlock's TCP rules and seccomp, egress is held but
// for a host listening on the proxy's port (weak); without them, airlock
// run refuses unless the policy accepts egress-unenforced (missing).
func TestNoNetworkNamespace(t *testing.T) {
	p, sp := fakeHost(0)
	sp.fail = failWith("net", syscall.EPERM)
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireNetNS, strength: Missing},
		expect{name: RequireEgressProxy, strength: Weak, detail: []string{"name ports, not addresses", "listens on the proxy's port", "require netns refuses"}})
	p.LandlockABI = func() (int, error) { return 3, nil }
	check(t, CheckWith(context.Background(), p),
		expect{name: RequireEgressProxy, strength: Missing, detail: []string{`"weakerModes": ["egress-unenforced"]`}})
}
