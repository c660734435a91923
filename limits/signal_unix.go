//go:build unix

package limits

import (
	"syscall"
	"time"
)

// SignalCause names the cap whose rlimit ended a process that died of sig
// after using cpu of CPU time, under a CPU cap of capCPU: SIGXFSZ
// (RLIMIT_FSIZE) is "disk"; SIGXCPU (RLIMIT_CPU's soft limit) is "cpu",
// and so is SIGKILL once cpu has reached the cap, for RLIMIT_CPU's hard
// limit, a second past the soft one, kills a process that catches or
// ignores SIGXCPU (the Go runtime ignores it). Any other death is "". The
// sandbox asks it when no watched cap killed the run.
func SignalCause(sig syscall.Signal, cpu, capCPU time.Duration) KilledBy {
	switch {
	case sig == syscall.SIGXFSZ:
		return KilledByDisk
	case sig == syscall.SIGXCPU, sig == syscall.SIGKILL && capCPU > 0 && cpu >= capCPU:
		return KilledByCPU
	}
	return ""
}
