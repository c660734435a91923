package seccomp

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// BenchmarkAssemble times building the program from the rules (done once
// per process; Install reuses it).
func BenchmarkAssemble(b *testing.B) {
	for b.Loop() {
		prog, err := assemble()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bpf.Assemble(prog); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInstall times Install in fresh child processes, since a filter
// cannot be removed: ns/assemble is building and encoding the program
// (once per process), ns/install the prctl and seccomp calls with TSYNC,
// both measured inside the child; ns/op includes starting the child.
func BenchmarkInstall(b *testing.B) {
	var asm, inst int64
	for b.Loop() {
		out, err := testutil.SelfCommand(b, childEnv+"=bench-install").Output()
		if err != nil {
			b.Fatal(err)
		}
		var x, y int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &x, &y); err != nil {
			b.Fatalf("child output %q: %v", out, err)
		}
		asm, inst = asm+x, inst+y
	}
	b.ReportMetric(float64(asm)/float64(b.N), "ns/assemble")
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
