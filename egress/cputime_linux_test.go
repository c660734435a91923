package egress

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling thread has used, in ns.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// benchCPU runs fn b.N times on one locked thread and reports, besides
// ns/op (wall clock), cpu-ns/op: the thread's own CPU time per call. On a
// shared, loaded machine wall time counts the time other processes held
// the CPU; thread CPU time does not.
func benchCPU(b *testing.B, fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	start := threadCPU()
	n := 0
	for b.Loop() {
		fn()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(threadCPU()-start)/float64(n), "cpu-ns/op")
	}
}
