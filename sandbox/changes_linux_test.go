package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

func init() {
	// Registered here, not in payload_linux_test.go: only these tests use
	// it.
	payloads["tree"] = func(skip []string) int {
		m, err := testutil.DescribeTree(WorkspaceDir, skip)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		json.NewEncoder(os.Stdout).Encode(m)
		return 0
	}
}

// changesIn runs Changes, failing the test if it does not return within
// a minute (a fifo opened, a sparse file read whole).
func changesIn(t *testing.T, ss *Session, lim changes.Limits) changes.Patch {
	t.Helper()
	type result struct {
		p   changes.Patch
		err error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := ss.Changes(changes.Options{Limits: lim})
		ch <- result{p, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Changes: %v", r.err)
		}
		return r.p
	case <-time.After(time.Minute):
		t.Fatal("Changes did not return within a minute")
	}
	return changes.Patch{}
}

func manifestEntry(t *testing.T, p changes.Patch, path string) changes.FileChange {
	t.Helper()
	for _, f := range p.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("%q is not in the manifest %+v", path, p.Files)
	return changes.FileChange{}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestSessionChanges: a real session, steps that edit, add, delete,
// chmod and link (links to /etc/shadow, .. and /), a fifo, a 2 GB sparse
// file and a file over the per-file limit; then Changes, and git apply of
// its patch to a copy of the original gives the sandbox's tree, but for
// what the manifest says it left out.
func TestSessionChanges(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommands(t, "git")
	ws := t.TempDir()
	for name, content := range map[string]string{
		"edit.txt": "one\ntwo\nthree\n", "del.txt": "gone\n", "mode.sh": "#!/bin/sh\n", "ren.txt": "moved\n",
		"dir/nested.txt": "n\n", "sp ace.txt": "s\n", "bin.dat": "a\x00b", "keep.txt": "keep\n",
		"tree/a": "a\n", "tree/b": "b\n",
	} {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("keep.txt", filepath.Join(ws, "link"))
	orig := filepath.Join(t.TempDir(), "orig")
	if out, err := exec.Command("cp", "-a", ws, orig).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	caps := testCaps()
	caps.DiskWriteBytes = 3 << 30 // room for a 2 GB sparse file (RLIMIT_FSIZE)
	ss := startSession(t, Config{Workspace: ws, Caps: caps})
	// What the host directory does after the copy-in is not the original.
	os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("changed on the host\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "host-only"), []byte("x\n"), 0o644)

	res, out := execOut(t, ss, shellStep(`set -e
		printf 'one\nTWO\nthree\nfour\n' > edit.txt
		rm del.txt
		chmod +x mode.sh
		mv ren.txt renamed.txt
		rm link && echo 'now a file' > link
		ln -s /etc/shadow shadow
		ln -s .. up
		ln -s / root
		mkdir -p new/deep && echo x > new/deep/f
		echo 'S' >> 'sp ace.txt'
		printf 'q' > 'q"uote'
		printf 'x\000y\001' > bin.dat
		rm -r tree && ln -s /etc tree
		mkfifo fifo
		truncate -s 2G sparse
		head -c 100000 /dev/zero | tr '\0' a > big.txt
		echo done`))
	if res.ExitCode != 0 || !strings.Contains(out, "done") {
		t.Fatalf("step: %+v %q", res, out)
	}
	// A second step: the changes are the whole session's.
	if res, out := execOut(t, ss, shellStep("echo more >> edit.txt; touch empty")); res.ExitCode != 0 {
		t.Fatalf("step 2: %+v %q", res, out)
	}

	lim := changes.Limits{FileBytes: 64 << 10}
	p := changesIn(t, ss, lim)
	if again := changesIn(t, ss, lim); string(again.Diff) != string(p.Diff) || len(again.Files) != len(p.Files) {
		t.Fatal("a second Changes gave another patch")
	}

	// Links are what they are: never followed, on either side.
	for path, target := range map[string]string{"shadow": "/etc/shadow", "up": "..", "root": "/", "tree": "/etc"} {
		f := manifestEntry(t, p, path)
		if f.NewMode != changes.ModeSymlink || f.NewSize != int64(len(target)) || f.NewSHA256 != sha256Hex(target) {
			t.Errorf("%s: %+v, want a link to %s", path, f, target)
		}
	}
	for path, kind := range map[string]changes.Kind{
		"edit.txt": changes.Modified, "del.txt": changes.Deleted, "mode.sh": changes.ModeChanged,
		"renamed.txt": changes.Renamed, "link": changes.TypeChanged, "new/deep/f": changes.Added,
		"sp ace.txt": changes.Modified, "q\"uote": changes.Added, "bin.dat": changes.Modified,
		"tree/a": changes.Deleted, "tree": changes.Added, "fifo": changes.Skipped, "sparse": changes.Added,
		"big.txt": changes.Added, "empty": changes.Added,
	} {
		if f := manifestEntry(t, p, path); f.Kind != kind {
			t.Errorf("%s: %+v, want %s", path, f, kind)
		}
	}
	for _, path := range []string{"keep.txt", "host-only"} {
		for _, f := range p.Files {
			if f.Path == path {
				t.Errorf("%s is in the manifest: the host's later change was taken for the sandbox's", path)
			}
		}
	}
	if f := manifestEntry(t, p, "fifo"); !strings.Contains(f.Omitted, "fifo") {
		t.Errorf("fifo: %+v", f)
	}
	if f := manifestEntry(t, p, "sparse"); f.NewSize != 2<<30 || f.Omitted == "" || f.NewSHA256 != "" {
		t.Errorf("sparse: %+v, want 2 GiB, left out and not read", f)
	}
	if f := manifestEntry(t, p, "big.txt"); !strings.Contains(f.Omitted, "per-file limit") {
		t.Errorf("big.txt: %+v", f)
	}
	if p.Complete || !errors.Is(p.Incomplete(), changes.ErrIncomplete) {
		t.Errorf("Complete %v with omitted paths", p.Complete)
	}

	// git apply of the patch to a copy of the original gives the sandbox's
	// tree, less what was left out.
	var skip []string
	for _, f := range p.Files {
		if f.Omitted != "" {
			skip = append(skip, f.Path)
		}
	}
	patch := filepath.Join(t.TempDir(), "changes.patch")
	os.WriteFile(patch, p.Diff, 0o644)
	for _, args := range [][]string{{"apply", "--check", patch}, {"apply", patch}} {
		if out, err := testutil.GitCmd(orig, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s\n%s", args, err, out, p.Diff)
		}
	}
	applied, err := testutil.DescribeTree(orig, skip)
	if err != nil {
		t.Fatal(err)
	}
	st := payloadStep("tree", skip...)
	res, out = execOut(t, ss, st)
	var inside map[string]string
	if res.ExitCode != 0 || json.Unmarshal([]byte(out), &inside) != nil {
		t.Fatalf("tree payload: %+v %q", res, out)
	}
	if a, b := fmt.Sprint(applied), fmt.Sprint(inside); a != b {
		t.Fatalf("git apply gives\n%s\nthe sandbox has\n%s\npatch:\n%s", a, b, p.Diff)
	}

	// Frozen, it reads at once; closed, it fails.
	if _, err := ss.Freeze(); err != nil {
		t.Fatal(err)
	}
	if frozen := changesIn(t, ss, lim); string(frozen.Diff) != string(p.Diff) {
		t.Error("Changes on the frozen session gave another patch")
	}
	fd := int(ss.sb.orig.Fd())
	kept, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasSuffix(kept, "(deleted)") {
		t.Errorf("the original is kept in %q (%v), want an unnamed file", kept, err)
	}
	if info, err := ss.sb.orig.Stat(); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the original's file: %v %v, want mode 0600", info.Mode(), err)
	}
	if _, err := ss.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && l == kept {
		t.Error("the original's file is still open after Close")
	}
	if _, err := ss.Changes(changes.Options{Limits: lim}); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("Changes after Close: %v, want ErrSessionEnded", err)
	}
}

// TestSessionChangesNoWorkspace: without a workspace the original is an
// empty tree.
func TestSessionChangesNoWorkspace(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	if ss.sb.orig != nil {
		t.Error("a session without a workspace keeps an original")
	}
	if res, out := execOut(t, ss, shellStep("echo hi > made; ln -s made l")); res.ExitCode != 0 {
		t.Fatalf("%+v %q", res, out)
	}
	p := changesIn(t, ss, changes.Limits{})
	if len(p.Files) != 2 || p.Files[0].Path != "l" || p.Files[1].Path != "made" || !p.Complete {
		t.Fatalf("manifest %+v", p.Files)
	}
}

// TestSessionChangesEntries: a directory of more entries (or longer
// names) than the limits fails Changes with ErrTooLarge.
func TestSessionChangesEntries(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	if res, out := execOut(t, ss, shellStep("mkdir d && cd d && i=0; while [ $i -lt 2000 ]; do : > f$i; i=$((i+1)); done")); res.ExitCode != 0 {
		t.Fatalf("%+v %q", res, out)
	}
	if _, err := ss.Changes(changes.Options{Limits: changes.Limits{Entries: 1000}}); !errors.Is(err, changes.ErrTooLarge) {
		t.Fatalf("Changes over the entries limit: %v, want ErrTooLarge", err)
	}
	if _, err := ss.Changes(changes.Options{Limits: changes.Limits{NameBytes: 4000}}); !errors.Is(err, changes.ErrTooLarge) {
		t.Fatalf("Changes over the names limit: %v, want ErrTooLarge", err)
	}
	if p := changesIn(t, ss, changes.Limits{Entries: 3000}); len(p.Files) != 2000 {
		t.Fatalf("%d changed paths, want 2000", len(p.Files))
	}
}

// TestSessionChangesExcluded: a directory the operator's patterns
// exclude (in the original) and one the original's .gitignore excludes
// (made by a step) are listed alone, their entries neither read nor
// counted against the limits, and counted as excluded.
func TestSessionChangesExcluded(t *testing.T) {
	testutil.RequireRoot(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, ".gitignore"), []byte("cache/\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "vendor"), 0o755)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644)
	for i := range 1500 {
		if err := os.WriteFile(filepath.Join(ws, "vendor", fmt.Sprintf("f%d", i)), []byte("v\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ss := startSession(t, Config{Workspace: ws, Caps: testCaps()})
	if res, out := execOut(t, ss, shellStep(`set -e
		echo '// edited' >> src/a.go
		echo changed > vendor/f0
		mkdir cache && cd cache && i=0; while [ $i -lt 2000 ]; do : > f$i; i=$((i+1)); done`)); res.ExitCode != 0 {
		t.Fatalf("%+v %q", res, out)
	}
	opt := changes.Options{Limits: changes.Limits{Entries: 1000}, Exclude: []string{"vendor/"}}
	p, err := ss.Changes(opt)
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	if len(p.Files) != 1 || p.Files[0].Path != "src/a.go" || !p.Complete {
		t.Fatalf("manifest %+v, want src/a.go alone", p.Files)
	}
	want := []changes.Exclusion{{Class: changes.ExcludePolicy, Dirs: 1, First: []string{"vendor"}}, {Class: changes.ExcludeGitignore, Dirs: 1, First: []string{"cache"}}}
	if fmt.Sprint(p.Excluded) != fmt.Sprint(want) {
		t.Fatalf("excluded %v, want %v", p.Excluded, want)
	}
	if _, err := ss.Changes(changes.Options{Limits: opt.Limits}); !errors.Is(err, changes.ErrTooLarge) {
		t.Fatalf("Changes without the pattern: %v, want ErrTooLarge (the original's vendor)", err)
	}
}

// signalWriter closes started at its first write.
type signalWriter struct {
	once    sync.Once
	started chan struct{}
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	return len(b), nil
}

// TestSessionChangesBetweenSteps: Changes called while a step runs waits
// for it to end, so it never reads a tree that is being written.
func TestSessionChangesBetweenSteps(t *testing.T) {
	testutil.RequireRoot(t)
	ss := startSession(t, Config{})
	w := &signalWriter{started: make(chan struct{})}
	st := shellStep("echo started; sleep 1; echo late > late")
	st.Stdout = w
	done := make(chan error, 1)
	go func() {
		_, err := ss.Exec(context.Background(), st)
		done <- err
	}()
	<-w.started
	p := changesIn(t, ss, changes.Limits{})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 1 || p.Files[0].Path != "late" {
		t.Fatalf("Changes during a step gave %+v, want the step's whole work (late)", p.Files)
	}
}

const changesRootlessEnv = "AIRLOCK_TEST_CHANGES_ROOTLESS"

// TestSessionChangesRootless re-runs the test binary as uid 65534, where
// airlock cannot read what the contained code made unreadable: those
// paths are left out, said so, and the rest of the patch applies.
func TestSessionChangesRootless(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommands(t, "git")
	out := testutil.RunTestAsNobody(t, "TestSessionChangesRootlessInner", changesRootlessEnv+"=1")
	t.Logf("rootless run:\n%s", out)
}

func TestSessionChangesRootlessInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	if os.Getenv(changesRootlessEnv) == "" {
		t.Skip("run by TestSessionChangesRootless")
	}
	testMemory = 1 << 44
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "secret"), []byte("s\n"), 0o644)
	os.Mkdir(filepath.Join(ws, "closed"), 0o755)
	os.WriteFile(filepath.Join(ws, "closed", "in"), []byte("i\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "edit"), []byte("e\n"), 0o644)
	orig := filepath.Join(t.TempDir(), "orig")
	if out, err := exec.Command("cp", "-a", ws, orig).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ss := startSession(t, Config{Workspace: ws})
	if res, out := execOut(t, ss, shellStep("chmod 000 secret closed; echo E > edit; ln -s /etc/shadow l")); res.ExitCode != 0 {
		t.Fatalf("%+v %q", res, out)
	}
	p := changesIn(t, ss, changes.Limits{})
	if f := manifestEntry(t, p, "secret"); !strings.Contains(f.Omitted, "permission denied") {
		t.Errorf("secret: %+v", f)
	}
	if f := manifestEntry(t, p, "closed"); f.Kind != changes.Skipped || !strings.Contains(f.Omitted, "permission denied") {
		t.Errorf("closed: %+v", f)
	}
	if f := manifestEntry(t, p, "edit"); f.Omitted != "" || manifestEntry(t, p, "l").Omitted != "" {
		t.Errorf("manifest %+v", p.Files)
	}
	patch := filepath.Join(t.TempDir(), "changes.patch")
	os.WriteFile(patch, p.Diff, 0o644)
	if out, err := testutil.GitCmd(orig, "apply", patch).CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, p.Diff)
	}
	if b, _ := os.ReadFile(filepath.Join(orig, "edit")); string(b) != "E\n" {
		t.Errorf("edit after git apply: %q", b)
	}
	// Let the test's cleanup remove what the step closed.
	execOut(t, ss, shellStep("chmod 755 secret closed"))
}
