//go:build unix

package limits

import (
	"syscall"
	"testing"
	"time"
)

// TestSignalCause: every death an rlimit causes is named, RLIMIT_CPU's
// hard-limit SIGKILL included, and no other death is.
func TestSignalCause(t *testing.T) {
	capCPU := time.Second
	for _, tc := range []struct {
		sig  syscall.Signal
		cpu  time.Duration
		want KilledBy
	}{
		{syscall.SIGXFSZ, 0, KilledByDisk},
		{syscall.SIGXCPU, capCPU, KilledByCPU},
		{syscall.SIGXCPU, 0, KilledByCPU},
		{syscall.SIGKILL, 2 * capCPU, KilledByCPU}, // the hard limit, SIGXCPU ignored
		{syscall.SIGKILL, capCPU, KilledByCPU},
		{syscall.SIGKILL, capCPU - time.Millisecond, ""}, // killed, but not for CPU
		{syscall.SIGSEGV, 2 * capCPU, ""},
		{0, 2 * capCPU, ""},
	} {
		if got := SignalCause(tc.sig, tc.cpu, capCPU); got != tc.want {
			t.Errorf("SignalCause(%v, %v, %v) = %q, want %q", tc.sig, tc.cpu, capCPU, got, tc.want)
		}
	}
}
