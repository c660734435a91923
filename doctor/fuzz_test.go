package doctor

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzReadings feeds arbitrary /proc/self/status, mountinfo and sysctl
// contents to the doctor: it must never panic, and every control must
// keep a name, a mechanism and a known strength.
func FuzzReadings(f *testing.F) {
	f.Add([]byte(fakeStatus), []byte(fakeMountinfo), []byte("1"))
	f.Add([]byte("Seccomp:\t2\nCapBnd:\tzz\n"), []byte("1 0 0:2 / / rw - rootfs rootfs rw\n"), []byte("0\n"))
	f.Add([]byte(":\n::\n"), []byte(" - \n/ / / / / - \n"), []byte(""))
	f.Fuzz(func(t *testing.T, status, mountinfo, sysctl []byte) {
		p, sp := fakeHost(1000)
		fsys := p.FS.(fstest.MapFS)
		fsys["proc/self/status"] = &fstest.MapFile{Data: status}
		fsys["proc/self/mountinfo"] = &fstest.MapFile{Data: mountinfo}
		for _, name := range []string{"proc/sys/kernel/apparmor_restrict_unprivileged_userns",
			"proc/sys/kernel/unprivileged_userns_clone", "proc/sys/user/max_user_namespaces", "sys/kernel/security/lsm"} {
			fsys[name] = &fstest.MapFile{Data: sysctl}
		}
		sp.fail = failWith("user", errNoProbe)
		r := CheckWith(context.Background(), p)
		for _, c := range r.Controls {
			if c.Name == "" || c.Mechanism == "" {
				t.Fatalf("control without a name or mechanism: %+v", c)
			}
			switch c.Strength {
			case Strong, Weak, Missing:
			default:
				t.Fatalf("%s: strength %q", c.Name, c.Strength)
			}
			if c.Strength != Strong && strings.TrimSpace(c.Detail) == "" {
				t.Fatalf("%s: %s without a detail", c.Name, c.Strength)
			}
		}
	})
}

func TestNilProbesFailClosed(t *testing.T) {
	r := CheckWith(context.Background(), Probes{OS: "linux", Euid: 1000})
	for _, n := range RequirementNames() {
		c, _ := r.Control(n)
		if c.Strength == Strong {
			t.Errorf("%s is strong with no probes: %+v", n, c)
		}
	}
}
