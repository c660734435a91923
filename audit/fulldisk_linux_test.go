package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// fillerEvent is what a test appends to use the last bytes of a disk.
var fillerEvent = Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "filler"}

// fullLog is a log on a 64 KiB tmpfs holding a few events, and a way to
// fill that disk to the last byte a line could use.
func fullLog(t *testing.T) (l *Log, path string, fill func() (free func())) {
	t.Helper()
	dir := testutil.SmallTmpfs(t, 64<<10)
	path = filepath.Join(dir, "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for range 3 {
		if _, err := l.Append(denial("t", "git")); err != nil {
			t.Fatal(err)
		}
	}
	fill = func() func() {
		return testutil.FillDisk(t, dir, func() error {
			_, err := l.Append(fillerEvent)
			return err
		})
	}
	return l, path, fill
}

// TestFullDisk fills the log's file system: every append, synced or lazy,
// fails with ENOSPC and leaves the file as it was, which still verifies;
// once space is freed appends succeed again, with no repair needed.
func TestFullDisk(t *testing.T) {
	l, path, fill := fullLog(t)
	free := fill()
	before, _ := os.ReadFile(path)
	if _, err := l.Append(denial("t", "git", strings.Repeat("x", 300))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if _, _, err := l.AppendLazy(Event{Kind: KindResource, Decision: DecisionInfo, Reason: strings.Repeat("r", 300)}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("lazy append on a full disk: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatalf("a failed append changed the file: %d bytes, then %d", len(before), len(after))
	}
	free()
	if _, err := l.Append(denial("t", "git")); err != nil {
		t.Fatalf("append after freeing the disk: %v", err)
	}
	data, _ := os.ReadFile(path)
	if rep, e := verifyBytes(t, data); e != nil || len(rep.Repairs) != 0 {
		t.Fatalf("verify: %+v, %v", rep, e)
	}
}

// TestTornLineOnFullDisk leaves a torn line at the end of a full log, as a
// writer killed mid-write (or one whose cut failed) would: an append fails
// and changes nothing, so the one damaged line stays repairable, and the
// first append after space is freed repairs it.
func TestTornLineOnFullDisk(t *testing.T) {
	l, path, fill := fullLog(t)
	l.Close()
	free := fill()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := 0
	for ; ; torn++ { // the start of a line, a byte at a time, until the disk is full
		if _, err := f.Write([]byte{"{\"seq\":99,\"ts\":\"2026"[torn%20]}); err != nil {
			break
		}
	}
	f.Close()
	if torn == 0 {
		t.Skip("no room was left in the log's last page for a torn line")
	}
	l2, err := Open(path)
	if err != nil {
		t.Fatalf("open a log with a torn end: %v", err)
	}
	defer l2.Close()
	before, _ := os.ReadFile(path)
	if _, err := l2.Append(denial("t", "git")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("a failed repair changed the file")
	}
	free()
	if _, err := l2.Append(denial("t", "git")); err != nil {
		t.Fatalf("append after freeing the disk: %v", err)
	}
	data, _ := os.ReadFile(path)
	rep, e := verifyBytes(t, data)
	if e != nil || len(rep.Repairs) != 1 || rep.Repairs[0].Bytes != int64(torn) {
		t.Fatalf("verify: %+v, %v; want one repair of %d bytes", rep, e, torn)
	}
}

// TestFailedSyncCutBack makes fdatasync fail: the append reports it, and
// the line it wrote is cut off again, so that the file never holds a
// record its writer was told was not written. Before, the line stayed.
func TestFailedSyncCutBack(t *testing.T) {
	l, path := openTest(t)
	if _, err := l.Append(denial("t", "git")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	orig := syncData
	syncData = func(*os.File) error { return syscall.EIO }
	t.Cleanup(func() { syncData = orig })
	if _, err := l.Append(denial("t", "rm")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatalf("the unsynced line was left: %d bytes, then %d", len(before), len(after))
	}
	syncData = orig
	if _, err := l.Append(denial("t", "ls")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if rep, e := verifyBytes(t, data); e != nil || rep.Events != 3 {
		t.Fatalf("verify: %+v, %v", rep, e)
	}
}
