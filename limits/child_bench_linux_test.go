package limits

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkChild times what a session step costs in caps: NewChild of a
// step's group under a session's, Stats, Delete.
func BenchmarkChild(b *testing.B) {
	for name, l := range benchLayouts(b) {
		b.Run(name, func(b *testing.B) {
			g := newTestGroup(b, testCaps(), &l)
			var tNew, tDelete time.Duration
			n := 0
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				c, err := g.NewChild(fmt.Sprintf("step-%d", i))
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Limit(ChildCaps{MemoryBytes: 64 << 20, Tasks: 16}); err != nil {
					b.Fatal(err)
				}
				tNew += time.Since(t0)
				c.Stats()
				t0 = time.Now()
				if err := c.Delete(); err != nil {
					b.Fatal(err)
				}
				tDelete += time.Since(t0)
				n++
			}
			b.ReportMetric(float64(tNew.Microseconds())/float64(n), "new-µs/op")
			b.ReportMetric(float64(tDelete.Microseconds())/float64(n), "delete-µs/op")
		})
	}
}

// BenchmarkReadBounded reads one cgroup file as a step's counters do;
// BenchmarkPeerOSReadFile reads it with os.ReadFile, as before.
func BenchmarkReadBounded(b *testing.B) {
	name := benchCgroupFile(b)
	for b.Loop() {
		if _, err := readBounded(name); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPeerOSReadFile(b *testing.B) {
	name := benchCgroupFile(b)
	for b.Loop() {
		if _, err := os.ReadFile(name); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCgroupFile is a one-value file of the host's v1 memory hierarchy.
func benchCgroupFile(b *testing.B) string {
	l, err := hostLayout()
	if err != nil {
		b.Fatal(err)
	}
	dir := l.v1["memory"]
	if dir == "" {
		b.Skip("no cgroup v1 memory hierarchy")
	}
	return filepath.Join(dir, "memory.usage_in_bytes")
}
