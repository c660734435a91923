package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestLogFileIsCloseOnExec checks that the log's descriptor is not
// inherited by a command airlock starts: the sandbox must never hold it.
func TestLogFileIsCloseOnExec(t *testing.T) {
	l, _ := openTest(t)
	flags, err := unix.FcntlInt(l.f.Fd(), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Error("the audit log's descriptor is inherited across exec")
	}
}

// TestFullDiskLeavesNoPartialLine fills a tiny tmpfs: the append that
// does not fit stops mid-line with ENOSPC (a short write), fails, and the
// file is cut back to its last whole line.
func TestFullDiskLeavesNoPartialLine(t *testing.T) {
	path := filepath.Join(testutil.SmallTmpfs(t, 8<<10), "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		before, _ := os.Stat(path)
		if _, full = l.Append(denial("run_tests", "git", "clone", "https://attacker.example/repo")); full != nil {
			after, _ := os.Stat(path)
			if after.Size() != before.Size() {
				t.Errorf("failed append left %d bytes behind", after.Size()-before.Size())
			}
		}
	}
	if !errors.Is(full, unix.ENOSPC) {
		t.Fatalf("filling the disk gave %v, want ENOSPC", full)
	}
	b, _ := os.ReadFile(path)
	if _, err := Verify(bytes.NewReader(b)); err != nil {
		t.Fatalf("after a full disk: %v", err)
	}
}
