package limits

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// buildRlimits computes the rlimits for the init (see Group.Rlimits) and
// notes in the receipt where the host's hard limit lowers a cap.
func buildRlimits(caps Caps, provides map[string]bool, receipt map[string]string) []Rlimit {
	cpuSecs := uint64(math.Ceil(caps.CPU.Seconds()))
	rl := []Rlimit{
		// SIGXCPU at the cap, SIGKILL a second later should the process
		// catch SIGXCPU. Per process: the group's total is the watch's.
		{Resource: unix.RLIMIT_CPU, Name: "RLIMIT_CPU", Cur: cpuSecs, Max: cpuSecs + 1},
		{Resource: unix.RLIMIT_FSIZE, Name: "RLIMIT_FSIZE", Cur: uint64(caps.DiskWriteBytes), Max: uint64(caps.DiskWriteBytes)},
		{Resource: unix.RLIMIT_NOFILE, Name: "RLIMIT_NOFILE", Cur: uint64(caps.OpenFiles), Max: uint64(caps.OpenFiles)},
		{Resource: unix.RLIMIT_CORE, Name: "RLIMIT_CORE", Cur: 0, Max: 0},
		// The kernel counts queued signals and POSIX message queue bytes
		// per user at every level of user namespaces: each is charged to
		// the sandbox's owner on the host too (root, or the rootless
		// caller), whose own limit is the host's. Bounded, a sandbox
		// takes at most this much of its owner's.
		{Resource: unix.RLIMIT_SIGPENDING, Name: "RLIMIT_SIGPENDING", Cur: 1024, Max: 1024},
		{Resource: unix.RLIMIT_MSGQUEUE, Name: "RLIMIT_MSGQUEUE", Cur: 128 << 10, Max: 128 << 10},
	}
	if !provides[RequireCgroupMemory] {
		rl = append(rl, Rlimit{Resource: unix.RLIMIT_DATA, Name: "RLIMIT_DATA", Cur: uint64(caps.MemoryBytes), Max: uint64(caps.MemoryBytes)})
	}
	if !provides[RequireCgroupPids] {
		rl = append(rl, Rlimit{Resource: unix.RLIMIT_NPROC, Name: "RLIMIT_NPROC", Cur: uint64(caps.Tasks), Max: uint64(caps.Tasks)})
	}
	// Nobody here can raise a hard limit (CAP_SYS_RESOURCE may be absent
	// even for root): a cap above this process's hard limit is lowered to
	// it, which is stricter than asked, and the receipt says so.
	for i := range rl {
		var cur unix.Rlimit
		if err := unix.Getrlimit(rl[i].Resource, &cur); err != nil || cur.Max == unix.RLIM_INFINITY || rl[i].Max <= cur.Max {
			continue
		}
		if rl[i].Resource == unix.RLIMIT_NOFILE {
			receipt[ControlOpenFiles] = fmt.Sprintf("RLIMIT_NOFILE (lowered to the host's hard limit %d)", cur.Max)
		}
		rl[i].Max = cur.Max
		rl[i].Cur = min(rl[i].Cur, cur.Max)
	}
	return rl
}
