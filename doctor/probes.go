package doctor

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/mountinfo"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// Probes are the host readings Check makes. HostProbes returns the real
// ones; tests replace them to play other hosts.
type Probes struct {
	// OS and Arch are Go's names for the system and architecture.
	OS, Arch string
	// Euid is the effective uid the sandbox would run as.
	Euid int
	// Executable is airlock's own path, for fixes that name it.
	Executable string
	// FS reads /proc and /sys, with paths relative to the root
	// ("proc/self/status", "proc/sys/kernel/osrelease").
	FS fs.FS
	// Spawn starts a child in new namespaces, named as in /proc/self/ns
	// ("user", "pid", "mnt", "net", "ipc", "uts", "cgroup"), and returns
	// nil when the kernel let it run. With "user" it maps the caller to
	// root inside and uses a capability there (chroot), so that a
	// restriction that only strips capabilities (AppArmor's on Ubuntu)
	// counts as a failure.
	Spawn func(ctx context.Context, namespaces ...string) error
	// LandlockABI returns the kernel's Landlock ABI version.
	LandlockABI func() (int, error)
	// SeccompFilter reports whether seccomp filter mode with the
	// KILL_PROCESS action is available.
	SeccompFilter func() bool
	// SeccompFilterDescription describes airlock's filter for the report.
	SeccompFilterDescription string
	// Cgroups reports the cgroup controllers this user can use.
	Cgroups func() limits.HostInfo
	// NoFile returns the open-files limit (RLIMIT_NOFILE).
	NoFile func() (soft, hard uint64, err error)
	// Groups returns the caller's supplementary groups and what the host
	// offers to drop them in a rootless sandbox.
	Groups func() (idmap.Groups, error)
	// Proc mounts a fresh proc in a child in new user, mount and pid
	// namespaces, as the sandbox's init does; an error
	// matching errProcRefused means the kernel refused it (EPERM).
	Proc func(ctx context.Context) error
	// SeccompStack installs airlock's two filters in a child, on top of
	// any filter this process runs under.
	SeccompStack func(ctx context.Context) error
	// Kernel names the system's release where there is no /proc (macOS:
	// its product version and Darwin's release).
	Kernel string
	// Seatbelt runs a program under a profile airlock generates, with
	// sandbox-exec, and returns nil when it ran (macOS).
	Seatbelt func(ctx context.Context) error
}

// HostProbes returns the probes of the real host: those every system
// has, and this system's own (hostProbes).
func HostProbes() Probes {
	exe, _ := os.Executable()
	return hostProbes(Probes{
		OS:                       runtime.GOOS,
		Arch:                     runtime.GOARCH,
		Euid:                     os.Geteuid(),
		Executable:               exe,
		SeccompFilter:            seccomp.Available,
		SeccompFilterDescription: seccomp.Describe(),
		Cgroups:                  limits.Detect,
		Groups:                   idmap.Inspect,
	})
}

// maxRead caps every file the doctor reads; mountinfo on a busy host is
// the largest.
const maxRead = 1 << 20

// read returns the trimmed contents of name in p.FS, and whether it could
// be read.
func (p Probes) read(name string) (string, bool) {
	if p.FS == nil {
		return "", false
	}
	f, err := p.FS.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// exists reports whether name exists in p.FS.
func (p Probes) exists(name string) bool {
	if p.FS == nil {
		return false
	}
	_, err := fs.Stat(p.FS, name)
	return err == nil
}

// status returns the fields of /proc/self/status ("Seccomp" -> "0").
func (p Probes) status() map[string]string {
	out := map[string]string{}
	s, ok := p.read("proc/self/status")
	if !ok {
		return out
	}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// rootFSType returns the type of the filesystem mounted at / (the last
// such mount in /proc/self/mountinfo, which is the one visible).
func (p Probes) rootFSType() (string, bool) {
	s, ok := p.read("proc/self/mountinfo")
	if !ok {
		return "", false
	}
	mounts, err := mountinfo.Parse([]byte(s))
	if err != nil {
		return "", false
	}
	var typ string
	found := false
	for _, m := range mounts {
		if m.Point == "/" {
			typ, found = m.FSType, true
		}
	}
	return typ, found
}

// errProcRefused is the Proc probe's error where the kernel refuses a
// fresh proc.
var errProcRefused = errors.New("a fresh proc mount is refused (EPERM): the /proc here has parts masked by mounts over them, as a container runtime's has")

// errNoProbe is the answer of a probe that was not provided.
var errNoProbe = errors.New("probe not provided")

// withDefaults replaces nil probes with ones that fail.
func (p Probes) withDefaults() Probes {
	if p.Spawn == nil {
		p.Spawn = func(context.Context, ...string) error { return errNoProbe }
	}
	if p.LandlockABI == nil {
		p.LandlockABI = func() (int, error) { return 0, errNoProbe }
	}
	if p.SeccompFilter == nil {
		p.SeccompFilter = func() bool { return false }
	}
	if p.SeccompFilterDescription == "" {
		p.SeccompFilterDescription = "seccomp filter"
	}
	if p.Cgroups == nil {
		p.Cgroups = func() limits.HostInfo {
			return limits.HostInfo{Mode: limits.ModeNone, Euid: p.Euid, Notes: []string{errNoProbe.Error()}}
		}
	}
	if p.NoFile == nil {
		p.NoFile = func() (uint64, uint64, error) { return 0, 0, errNoProbe }
	}
	if p.Groups == nil {
		p.Groups = func() (idmap.Groups, error) { return idmap.Groups{}, errNoProbe }
	}
	if p.Proc == nil {
		p.Proc = func(context.Context) error { return errNoProbe }
	}
	if p.SeccompStack == nil {
		p.SeccompStack = func(context.Context) error { return errNoProbe }
	}
	if p.Seatbelt == nil {
		p.Seatbelt = func(context.Context) error { return errNoProbe }
	}
	return p
}
