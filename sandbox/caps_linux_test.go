package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The caps that must hold in total for a run (docs/sandbox.md, "Caps"),
// each tried from inside; TestRootlessInner runs them rootless too.

func TestDiskCapTotal(t *testing.T)     { testutil.RequireRoot(t); testDiskCapTotal(t) }
func TestDiskInodeCap(t *testing.T)     { testutil.RequireRoot(t); testDiskInodeCap(t) }
func TestCPUCapAttributed(t *testing.T) { testutil.RequireRoot(t); testCPUCapAttributed(t) }
func TestOutputCap(t *testing.T)        { testutil.RequireRoot(t); testOutputCap(t) }

// testDiskCapTotal writes 8 MiB into each of /tmp, /workspace, /findings
// and /dev/shm under a 16 MiB disk cap: together they hold 16 MiB at most.
func testDiskCapTotal(t *testing.T) {
	cfg := shellConfig(`for d in /tmp /workspace /findings /dev/shm; do
  dd if=/dev/zero of=$d/f bs=1M count=8 2>/dev/null
done
cat /tmp/f /workspace/f /findings/f /dev/shm/f | wc -c`)
	res, out := runContained(t, cfg)
	var n int64
	if _, err := fmt.Sscan(out, &n); err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v, output %q", res, out)
	}
	if limit := cfg.Caps.DiskWriteBytes; n > limit {
		t.Fatalf("wrote %d bytes in the four directories together, over the %d-byte disk cap", n, limit)
	}
}

// testDiskInodeCap makes empty files until refused: the inode cap stops
// them at diskInodes of the disk cap, so that they cannot cost the host's
// kernel memory without bound (the size cap does not count them).
func testDiskInodeCap(t *testing.T) {
	for _, dir := range []string{TmpDir, "/dev/shm"} {
		res, out := runContained(t, payloadConfig("touch", dir))
		var n int
		var rest string
		fmt.Sscan(out, &n, &rest)
		max := int(16<<20/4096) + 1
		if res.ExitCode != 3 || n > max || !strings.Contains(out, "no space left on device") {
			t.Errorf("%s: result %+v, output %q; want ENOSPC after at most %d files", dir, res, out, max)
		}
	}
}

// testCPUCapAttributed runs CPU burners under a 1 s CPU cap, one that
// dies of SIGXCPU (sh) and one that ignores it and is killed by
// RLIMIT_CPU's hard limit (Go): every run is attributed to the cpu cap.
func testCPUCapAttributed(t *testing.T) {
	for i := range 3 {
		for _, cfg := range []Config{shellConfig("while :; do :; done"), payloadConfig("spin")} {
			cfg.Caps.CPU, cfg.Caps.Wall = time.Second, 20*time.Second
			res, out := runContained(t, cfg)
			if res.KilledBy != "cpu" {
				t.Errorf("run %d of %s: result %+v (output %q), want killed by cpu", i, cfg.Path, res, out)
			}
		}
	}
}

// countingWriter keeps the count and the last bytes of what it is given.
type countingWriter struct {
	mu   sync.Mutex
	n    int64
	tail []byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += int64(len(p))
	w.tail = append(w.tail, p...)
	if len(w.tail) > 4096 {
		w.tail = w.tail[len(w.tail)-4096:]
	}
	return len(p), nil
}

// wantCut checks that w got no more than limit bytes and the cut line.
func (w *countingWriter) wantCut(t *testing.T, limit int64) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	note := fmt.Sprintf(outputCutLine, limit)
	if w.n != limit+int64(len(note)) || !strings.HasSuffix(string(w.tail), note) {
		t.Errorf("forwarded %d bytes ending %q; want the %d-byte cap, then %q", w.n, w.tail[max(0, len(w.tail)-200):], limit, note)
	}
}

// testOutputCap floods stdout and stderr under a 1 MiB output cap: the
// run is killed by the output cap, and what airlock forwards is the cap's
// worth and the line that says it was cut, however fast the flood.
func testOutputCap(t *testing.T) {
	cfg := payloadConfig("flood")
	cfg.Caps.OutputBytes = 1 << 20
	var w countingWriter
	cfg.Stdout, cfg.Stderr = &w, &w
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatal(err)
	}
	res, err := s.Wait()
	if err != nil || res.KilledBy != "output" {
		t.Fatalf("result %+v, %v; want killed by output", res, err)
	}
	w.wantCut(t, cfg.Caps.OutputBytes)
	if !strings.Contains(res.Receipt["output"], "1048576 bytes together") {
		t.Errorf("receipt output %q", res.Receipt["output"])
	}

	// In a session the cap is each step's: the flood's step is killed,
	// and the session goes on.
	ss := startSession(t, Config{Caps: cfg.Caps})
	st := payloadStep("flood")
	var sw countingWriter
	st.Stdout, st.Stderr = &sw, &sw
	sres, err := ss.Exec(context.Background(), st)
	if err != nil || sres.KilledBy != "output" {
		t.Fatalf("step: %+v, %v; want killed by output", sres, err)
	}
	sw.wantCut(t, cfg.Caps.OutputBytes)
	if r, out := execOut(t, ss, shellStep("echo next")); r.ExitCode != 0 || out != "next\n" {
		t.Fatalf("the next step: %+v %q", r, out)
	}
	if _, err := ss.Close(); err != nil {
		t.Fatal(err)
	}
}
