package testutil

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// NobodyID is the uid and gid that rootless tests run as.
const NobodyID = 65534

// SelfCommand returns a command that re-runs the test binary with env
// added to the environment and no test selected, so that a TestMain can
// act on env (the runc and tailscale way of testing a process-wide
// change such as a seccomp filter or a privilege drop). Its working
// directory is a fresh temporary directory, so a core dump or a stray file
// cannot land in the package's source tree.
func SelfCommand(t testing.TB, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testutil: find the test binary: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	if os.Getenv("GORACE") == "" {
		// The race detector sleeps a second at exit by default.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.Dir = t.TempDir()
	return cmd
}

// AsNobody makes cmd run as uid and gid 65534 with no capabilities and
// no supplementary groups but groups (a caller in a group, as rootless
// claims about groups need), from a copy of its binary and a working
// directory that user can reach (go test's build directory and t.TempDir
// are private to root). It needs root; the copies are removed at cleanup.
func AsNobody(t testing.TB, cmd *exec.Cmd, groups ...uint32) *exec.Cmd {
	t.Helper()
	RequireRoot(t)
	dir := SharedDir(t, "airlock-nobody-")
	bin := filepath.Join(dir, filepath.Base(cmd.Path))
	if err := copyFile(cmd.Path, bin, 0o755); err != nil {
		t.Fatalf("testutil: copy %s for nobody: %v", cmd.Path, err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, NobodyID, NobodyID); err != nil {
		t.Fatal(err)
	}
	cmd.Path, cmd.Dir = bin, work
	if len(cmd.Args) > 0 {
		cmd.Args[0] = bin
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: NobodyID, Gid: NobodyID, Groups: append([]uint32{}, groups...)}
	return cmd
}

// SharedDir makes a fresh directory every user may enter (t.TempDir's
// are root's alone), removed at cleanup.
func SharedDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// RunTestAsNobody re-runs the calling test binary as NobodyID (AsNobody)
// with only the test named test selected and a small environment plus env,
// and returns its output; it fails t unless that test ran and passed. It
// is how a root test shows a rootless claim for real.
func RunTestAsNobody(t testing.TB, test string, env ...string) string {
	t.Helper()
	return RunTestAsNobodyInGroups(t, test, nil, env...)
}

// RunTestAsNobodyInGroups is RunTestAsNobody with the supplementary
// groups groups.
func RunTestAsNobodyInGroups(t testing.TB, test string, groups []uint32, env ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testutil: find the test binary: %v", err)
	}
	cmd := AsNobody(t, exec.Command(exe, "-test.run=^"+test+"$", "-test.v", "-test.count=1"), groups...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp", "HOME=/nonexistent", "GORACE=atexit_sleep_ms=0"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s as uid %d: %v\n%s", test, NobodyID, err, out)
	}
	return string(out)
}
