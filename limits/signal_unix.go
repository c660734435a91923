//go:build unix

package limits

import "syscall"

// SignalCause names the cap whose rlimit sends sig when a process dies of
// it: SIGXFSZ (RLIMIT_FSIZE) is "disk", SIGXCPU (RLIMIT_CPU) is "cpu"; any
// other signal is "". The sandbox asks it when KilledBy is empty and its
// child died of a signal.
func SignalCause(sig syscall.Signal) KilledBy {
	switch sig {
	case syscall.SIGXFSZ:
		return KilledByDisk
	case syscall.SIGXCPU:
		return KilledByCPU
	}
	return ""
}
