package doctor

import (
	"context"
	"fmt"
	"slices"
	"testing/fstest"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
)

// fakeSpawn records the Spawn requests of a fake host.
type fakeSpawn struct {
	// fail returns the error for a request, or nil to let it run.
	fail  func(ns []string) error
	calls [][]string
}

func (f *fakeSpawn) spawn(_ context.Context, ns ...string) error {
	f.calls = append(f.calls, ns)
	if f.fail == nil {
		return nil
	}
	return f.fail(ns)
}

// failWith fails every request that includes namespace ns.
func failWith(ns string, err error) func([]string) error {
	return func(req []string) error {
		if slices.Contains(req, ns) {
			return err
		}
		return nil
	}
}

const fakeStatus = `Name:	airlock
Uid:	%d	%d	%d	%d
NoNewPrivs:	0
Seccomp:	%s
Seccomp_filters:	%s
CapBnd:	000001fffeffffff
`

const fakeMountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:2 - proc proc rw
`

// fakeHost returns the probes of a healthy Linux host (this one, as
// PLATFORM.md describes it) and its Spawn recorder, for tests to spoil.
func fakeHost(euid int) (Probes, *fakeSpawn) {
	fsys := fstest.MapFS{
		"proc/sys/kernel/osrelease":         {Data: []byte("6.18.4\n")},
		"proc/sys/user/max_user_namespaces": {Data: []byte("96551\n")},
		"proc/self/status":                  {Data: []byte(fmt.Sprintf(fakeStatus, euid, euid, euid, euid, "0", "0"))},
		"proc/self/mountinfo":               {Data: []byte(fakeMountinfo)},
	}
	for _, ns := range []string{"user", "pid", "mnt", "net", "ipc", "uts", "cgroup"} {
		fsys["proc/self/ns/"+ns] = &fstest.MapFile{Data: []byte{}}
	}
	sp := &fakeSpawn{}
	ctl := func(name, file string, usable bool) limits.Controller {
		c := limits.Controller{Name: name, Version: 1, File: file, Path: "/", Usable: usable}
		if !usable {
			c.Why = "cannot create a group in /sys/fs/cgroup/" + name + ": permission denied"
		}
		return c
	}
	usable := euid == 0
	p := Probes{
		OS: "linux", Arch: "amd64", Euid: euid, Executable: "/opt/airlock/bin/airlock",
		FS:                       fsys,
		Spawn:                    sp.spawn,
		LandlockABI:              func() (int, error) { return 7, nil },
		SeccompFilter:            func() bool { return true },
		SeccompFilterDescription: "seccomp filter: test",
		Cgroups: func() limits.HostInfo {
			return limits.HostInfo{Mode: limits.ModeHybrid, UnifiedMount: "/sys/fs/cgroup/unified", CgroupKill: true, Euid: euid,
				Controllers: []limits.Controller{
					ctl("memory", "memory.limit_in_bytes", usable), ctl("pids", "pids.max", usable),
					ctl("cpu", "cpuacct.usage", usable), ctl("freezer", "freezer.state", usable),
				}}
		},
		NoFile:       func() (uint64, uint64, error) { return 1024, 20000, nil },
		Groups:       func() (idmap.Groups, error) { return idmap.Groups{User: "agent"}, nil },
		Proc:         func(context.Context) error { return nil },
		SeccompStack: func(context.Context) error { return nil },
	}
	return p, sp
}

// setFile replaces (or, with data nil, removes) a file of a fake host.
func setFile(p Probes, name string, data *string) {
	fsys := p.FS.(fstest.MapFS)
	if data == nil {
		delete(fsys, name)
		return
	}
	fsys[name] = &fstest.MapFile{Data: []byte(*data)}
}

func ptr(s string) *string { return &s }
