package doctor

import (
	"context"
	"os"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// hostProbes adds Linux's probes to p: /proc and /sys, children in new
// namespaces, Landlock, a fresh proc and seccomp's stacked filters.
func hostProbes(p Probes) Probes {
	p.FS = os.DirFS("/")
	p.Spawn = spawn
	p.LandlockABI = llsyscall.LandlockGetABIVersion
	p.Proc = procProbe
	p.SeccompStack = seccompProbe
	p.NoFile = noFile
	return p
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
