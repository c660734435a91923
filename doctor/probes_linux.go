package doctor

import (
	"context"
	"os"
	"runtime"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// HostProbes returns the probes of the real host.
func HostProbes() Probes {
	exe, _ := os.Executable()
	return Probes{
		OS:                       runtime.GOOS,
		Arch:                     runtime.GOARCH,
		Euid:                     os.Geteuid(),
		Executable:               exe,
		FS:                       os.DirFS("/"),
		Spawn:                    spawn,
		LandlockABI:              llsyscall.LandlockGetABIVersion,
		SeccompFilter:            seccomp.Available,
		SeccompFilterDescription: seccomp.Describe(),
		Cgroups:                  limits.Detect,
		Groups:                   idmap.Inspect,
		Proc:                     procProbe,
		SeccompStack:             seccompProbe,
		NoFile: func() (uint64, uint64, error) {
			var r unix.Rlimit
			err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r)
			return r.Cur, r.Max, err
		},
	}
}

// cloneFlags maps /proc/self/ns names to CLONE_NEW* flags.
var cloneFlags = map[string]uintptr{
	"user": unix.CLONE_NEWUSER, "pid": unix.CLONE_NEWPID, "mnt": unix.CLONE_NEWNS,
	"net": unix.CLONE_NEWNET, "ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS,
	"cgroup": unix.CLONE_NEWCGROUP,
}

// spawn runs this binary as a child that exits at once, in the named new
// namespaces. A real child is the only honest test: sysctls do not cover
// every restriction (AppArmor, a container's seccomp profile, an LSM),
// and unshare(CLONE_NEWUSER) is refused in a multithreaded Go process
// whatever the host allows.
func spawn(ctx context.Context, namespaces ...string) error {
	var flags uintptr
	for _, n := range namespaces {
		flags |= cloneFlags[n]
	}
	return runSelf(ctx, "true", nsAttr(flags))
}
