package seccomp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// BenchmarkInstall times Install in fresh child processes, since a filter
// cannot be removed: ns/install is the first Install of a process, as the
// sandbox's init makes it (the prctl and seccomp calls with TSYNC; the
// program is compiled in, nothing is assembled), measured inside the
// child; ns/op includes starting the child.
func BenchmarkInstall(b *testing.B) {
	var inst int64
	for b.Loop() {
		out, err := testutil.SelfCommand(b, childEnv+"=bench-install").Output()
		if err != nil {
			b.Fatal(err)
		}
		var x int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &x); err != nil {
			b.Fatalf("child output %q: %v", out, err)
		}
		inst += x
	}
	b.ReportMetric(float64(inst)/float64(b.N), "ns/install")
}

// BenchmarkFilterOverhead measures what the filter adds to every system
// call: getpid in a child before and after Install.
func BenchmarkFilterOverhead(b *testing.B) {
	var before, after float64
	for b.Loop() {
		out, err := testutil.SelfCommand(b, childEnv+"=bench-getpid").Output()
		if err != nil {
			b.Fatal(err)
		}
		var x, y float64
		if _, err := fmt.Sscan(string(out), &x, &y); err != nil {
			b.Fatalf("child output %q: %v", out, err)
		}
		before, after = before+x, after+y
	}
	b.ReportMetric(before/float64(b.N), "ns/getpid-unfiltered")
	b.ReportMetric(after/float64(b.N), "ns/getpid-filtered")
}
