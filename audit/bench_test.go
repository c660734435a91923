package audit

import (
	"bytes"
	"crypto/sha256"
	"os"
	"strconv"
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

// BenchmarkTreeLeaf is the tree's cost per record: one line hashed into
// the tree file (RFC 6962 leaf and the subtrees it completes) as the next
// checkpoint's catch-up does it. Appends themselves do no tree work.
func BenchmarkTreeLeaf(b *testing.B) {
	orig := syncData
	syncData = func(*os.File) error { return nil }
	defer func() { syncData = orig }()
	l, path := openTest(b)
	ev := denial("run_tests", "git", "clone", "https://attacker.example/repo")
	for range b.N {
		if _, err := l.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
	f, _ := os.Open(path)
	defer f.Close()
	fi, _ := f.Stat()
	t, err := openSideTree(path, "")
	if err != nil {
		b.Fatal(err)
	}
	defer t.close()
	b.ReportAllocs()
	reportCPU(b)
	b.ResetTimer()
	if err := syncTree(f, fi.Size(), t, true); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCheckpoint is the end of a run: after the run's four records
// (decision, launch, outcome, teardown), the checkpoint signed over them:
// the log's fdatasync, the catch-up, the Ed25519 signature, and the kept
// checkpoint written and synced with its directory. Only the checkpoint
// is timed (checkpoint-ns/op).
func BenchmarkCheckpoint(b *testing.B) {
	dir := b.TempDir()
	os.Chmod(dir, 0o700)
	s, err := LoadSigner(dir + "/" + KeyFileName)
	if err != nil {
		b.Fatal(err)
	}
	l, _ := openTest(b, WithSigner(s))
	ev := denial("run_tests", "git", "clone", "https://attacker.example/repo")
	var spent time.Duration
	for b.Loop() {
		for range 4 {
			if _, err := l.Append(ev); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if _, err := l.Checkpoint(); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "checkpoint-ns/op")
}

// BenchmarkProveRun is a run's proofs once its checkpoint is signed: four
// records proven from the tree file and each checked.
func BenchmarkProveRun(b *testing.B) {
	dir := b.TempDir()
	os.Chmod(dir, 0o700)
	s, _ := LoadSigner(dir + "/" + KeyFileName)
	l, _ := openTest(b, WithSigner(s))
	var evs []Event
	for i := range 1000 {
		ev, err := l.Append(denial("run_tests", "git", strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if i >= 996 {
			evs = append(evs, ev)
		}
	}
	cp, err := l.Checkpoint()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.Prove(cp, evs); err != nil {
			b.Fatal(err)
		}
	}
}
