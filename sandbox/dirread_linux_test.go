package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"golang.org/x/sys/unix"
)

// payloadEntries makes args[1] empty files with names of args[2] bytes
// in the new directory args[0].
func payloadEntries(args []string) int {
	n, _ := strconv.Atoi(args[1])
	size, _ := strconv.Atoi(args[2])
	if err := os.Mkdir(args[0], 0o755); err != nil {
		fmt.Println(err)
		return 3
	}
	pad := strings.Repeat("x", size-8)
	for i := range n {
		fd, err := unix.Open(fmt.Sprintf("%s/%s%08d", args[0], pad, i), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			fmt.Printf("%d %v\n", i, err)
			return 3
		}
		unix.Close(fd)
	}
	fmt.Println("made")
	return 0
}

// TestFindingsManyEntries: a sandbox that leaves 200,000 entries with
// long names in /findings costs airlock's own process no more than the
// entries cap: the copy-out lists a directory a batch at a time and stops
// at the cap, where reading it whole took every name into memory.
func TestFindingsManyEntries(t *testing.T) {
	testutil.RequireRoot(t)
	const n, nameLen = 200000, 250
	cfg := payloadConfig("entries", "/findings/big", strconv.Itoa(n), strconv.Itoa(nameLen))
	cfg.Caps.DiskWriteBytes, cfg.Caps.MemoryBytes = 1<<30, 1<<30
	cfg.Findings = filepath.Join(t.TempDir(), "findings")
	var out strings.Builder
	cfg.Stdout, cfg.Stderr = &out, &out
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatal(err)
	}
	// The payload runs to its end before Wait copies the findings out.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := s.Wait()
	runtime.ReadMemStats(&after)
	if res.ExitCode != 0 || !strings.Contains(out.String(), "made") || !errors.Is(err, findings.ErrLost) {
		t.Fatalf("result %+v, %v, output %q; want the entries made and not all kept", res, err, out.String())
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("copy-out allocated %d bytes, skipped %q", alloc, res.FindingsSkipped)
	// Every name is nameLen bytes: n of them are 50 MB, the cap's 2.5 MB
	// (and the copy of each entry kept some 2 KB more).
	if limit := uint64(n * nameLen); alloc > limit {
		t.Errorf("the copy-out allocated %d bytes, more than %d: it read more names than the entries cap", alloc, limit)
	}
	if len(res.FindingsSkipped) != 1 || !strings.Contains(res.FindingsSkipped[0], "more than 10000 entries") {
		t.Errorf("skipped %q, want one line for the cap", res.FindingsSkipped)
	}
	if ents, _ := os.ReadDir(filepath.Join(cfg.Findings, "big")); len(ents) != findings.MaxEntries-1 {
		t.Errorf("%d entries copied, want the cap's %d (big/ itself is one)", len(ents), findings.MaxEntries-1)
	}
}

// TestWorkspaceOverInodeCap: a workspace of more entries than the
// sandbox's disk holds is refused before the sandbox starts, with why.
func TestWorkspaceOverInodeCap(t *testing.T) {
	testutil.RequireRoot(t)
	ws := t.TempDir()
	for i := range 5000 {
		os.WriteFile(filepath.Join(ws, strconv.Itoa(i)), nil, 0o644)
	}
	cfg := shellConfig("true")
	cfg.Workspace = ws // 16 MiB of disk: 4096 inodes
	_, err := Start(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "more entries than the sandbox's disk holds") {
		t.Fatalf("Start: %v, want the workspace refused for its entries", err)
	}
}
