package holder_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain makes the test binary a sandbox init, a holder ("hold") and a
// watchdog ("watch") when re-executed as one, as airlock is.
func TestMain(m *testing.M) {
	sandbox.Init()
	if len(os.Args) == 2 {
		switch os.Args[1] {
		case "hold":
			if err := holder.Hold(os.Stdin, os.Stdout, nil); err != nil {
				os.Exit(125)
			}
			os.Exit(0)
		case "watch":
			if err := holder.Watch(os.Stdin, os.Stdout); err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	if len(os.Args) == 3 && os.Args[1] == "serve-as-is" {
		os.Exit(serveAsIs(os.Args[2]))
	}
	os.Exit(m.Run())
}

const testPolicy = `{"toolScopes": {"shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}]}}}`

// privateDir is a fresh runtime directory as Dir makes them: 0700, this
// user's.
func privateDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// start starts a holder for a session in dir, auditing to audit.
func start(t *testing.T, dir, auditFile string) holder.Info {
	t.Helper()
	info, err := holder.Start(context.Background(), holder.Config{Dir: dir, PolicyName: "test.json", Policy: []byte(testPolicy),
		Audit: auditFile})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// newSession starts a session in a fresh runtime directory with a fresh
// audit log, stopped at cleanup if it is still there.
func newSession(t *testing.T) (dir, auditFile string, info holder.Info) {
	t.Helper()
	dir, auditFile = privateDir(t), filepath.Join(t.TempDir(), "audit.jsonl")
	info = start(t, dir, auditFile)
	t.Cleanup(func() { stop(dir, info.ID) })
	return dir, auditFile, info
}

// stop stops a session if it is still there.
func stop(dir, id string) {
	if c, err := holder.Dial(dir, id); err == nil {
		c.Stop(nil, nil)
	}
}

func sh(script string, out *bytes.Buffer) enforcer.StepRequest {
	return enforcer.StepRequest{Tool: "shell", Command: "sh", Args: []string{"-c", script}, Stdout: out, Stderr: out}
}

// execStep runs st in c's session as session exec does (Client.Step),
// its result written to a file of the test's and read back.
func execStep(t *testing.T, c *holder.Client, st enforcer.StepRequest) (enforcer.Result, error) {
	result := filepath.Join(t.TempDir(), "result.json")
	r := step.Request{Tool: st.Tool, Argv: append([]string{st.Command}, st.Args...), Env: st.Env, Cwd: st.Cwd,
		Timeout: st.Timeout, Approval: st.Approval, Result: result}
	if _, err := c.Step(context.Background(), r, st.Stdin, st.Stdout, st.Stderr); err != nil {
		return enforcer.Result{}, err
	}
	var res enforcer.Result
	b, err := os.ReadFile(result)
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	return res, err
}

// TestHolderRoundTrip: a session's steps through its holder share state,
// stream their output and stdin, and the session stops cleanly.
func TestHolderRoundTrip(t *testing.T) {
	testutil.RequireRoot(t)
	dir, _, info := newSession(t)
	c, err := holder.Dial(dir, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st := sh("cat > kept; echo written", &out)
	st.Stdin = strings.NewReader("from the client\n")
	res, err := execStep(t, c, st)
	if err != nil || res.ExitCode != 0 || out.String() != "written\n" {
		t.Fatalf("step 1: %+v %v %q", res, err, out.String())
	}
	out.Reset()
	if res, err := execStep(t, c, sh("cat kept", &out)); err != nil || res.ExitCode != 0 || out.String() != "from the client\n" || res.Step != 2 {
		t.Fatalf("step 2: %+v %v %q", res, err, out.String())
	}
	if infos, err := holder.List(dir); err != nil || len(infos) != 1 || infos[0].ID != info.ID {
		t.Fatalf("list %+v %v", infos, err)
	}
	sum, _, err := c.Stop(nil, nil)
	if err != nil || sum.Steps != 2 || sum.Ended != enforcer.EndedClosed {
		t.Fatalf("stop %+v %v", sum, err)
	}
	// Stop returns once the socket and lock are gone: a start of the
	// same id right after it finds the id free.
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the runtime directory: %v", entries)
	}
	waitGone(t, info.Watchdog)
	testutil.CheckNoSandboxLeft(t, info.ID)
	if _, err := holder.Dial(dir, info.ID); !errors.Is(err, holder.ErrNoSession) {
		t.Errorf("dial after stop: %v", err)
	}
}

// TestHolderKilled: a holder killed with SIGKILL leaves nothing — no
// process of its sandbox, no cgroup, no mount, no socket or lock, no
// canary — and the teardown is in the audit stream, whose chain holds.
func TestHolderKilled(t *testing.T) {
	testutil.RequireRoot(t)
	dir, auditFile, info := newSession(t)
	c, err := holder.Dial(dir, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	// A step that leaves nothing running, then one killed mid-way.
	if res, err := execStep(t, c, sh("echo state > /tmp/s", &out)); err != nil || res.ExitCode != 0 {
		t.Fatalf("step: %+v %v", res, err)
	}
	pidns, err := os.Readlink("/proc/" + strconv.Itoa(info.Init) + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := execStep(t, c, sh("sleep 300", &out))
		done <- err
	}()
	waitFor(t, "the step's sleep", func() bool { return len(pidsIn(pidns)) >= 2 })
	if err := syscall.Kill(info.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("the step in flight did not fail with its holder")
	}
	waitGone(t, info.Watchdog)
	testutil.CheckNoProcessIn(t, pidns)
	testutil.CheckNoSandboxLeft(t, info.ID)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the runtime directory: %v", entries)
	}
	if stale := testutil.StaleCanaries(); len(stale) > 0 {
		t.Errorf("stale canary directories left: %v", stale)
	}
	f, err := os.Open(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f); err != nil {
		t.Fatalf("audit: %v", err)
	}
	b, _ := os.ReadFile(auditFile)
	if !strings.Contains(string(b), "its holder (pid "+strconv.Itoa(info.Pid)+") died") {
		t.Errorf("no teardown record of the dead holder in\n%s", b)
	}
}

// TestTwoUsers: root's session and a session of uid 65534 on one host;
// neither user can reach the other's: nobody cannot even find root's
// socket, root's client refuses nobody's socket, and nobody's holder
// answers no connection of root's.
func TestTwoUsers(t *testing.T) {
	testutil.RequireRoot(t)
	dir, _, info := newSession(t)
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, "AIRLOCK_TEST_OTHER="+info.Socket, "XDG_RUNTIME_DIR="))
	cmd.Args = append(cmd.Args, "-test.run=^TestOtherUserInner$", "-test.v")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	pr, pw := io.Pipe()
	w := io.MultiWriter(&out, pw)
	cmd.Stdout, cmd.Stderr = w, w // one writer: one copy
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A child that fails before it prints its session must not leave the
	// scan below waiting: its end closes the pipe.
	waited := make(chan error, 1)
	go func() {
		waited <- cmd.Wait()
		pw.Close()
	}()
	var otherDir, otherID, otherSock string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "SESSION" {
			otherDir, otherID, otherSock = f[1], f[2], f[3]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if otherID != "" {
		if _, err := holder.Dial(otherDir, otherID); err == nil || !strings.Contains(err.Error(), "owned by another user") {
			t.Errorf("root's Dial of nobody's session: %v", err)
		}
		if n, err := rawInfo(otherSock); n > 0 || err == nil {
			t.Errorf("nobody's holder answered root: %d bytes", n)
		}
	}
	stdin.Close()
	werr := <-waited
	if werr != nil || !strings.Contains(out.String(), "--- PASS: TestOtherUserInner") {
		t.Fatalf("as nobody: %v %q\n%s", werr, cmd.Args, out.String())
	}
	checkAnswers(t, dir, info.ID)
}

// checkAnswers fails t unless session id's holder still answers.
func checkAnswers(t *testing.T, dir, id string) {
	t.Helper()
	c, err := holder.Dial(dir, id)
	if err == nil {
		_, err = c.Info()
	}
	if err != nil {
		t.Fatalf("session %s after the attempt: %v", id, err)
	}
}

// TestOtherUserInner runs as uid 65534 for TestTwoUsers: it starts and
// uses a session of its own, cannot reach root's, says where its own is,
// and stops it when its stdin closes.
func TestOtherUserInner(t *testing.T) {
	rootSock := os.Getenv("AIRLOCK_TEST_OTHER")
	if rootSock == "" || os.Geteuid() == 0 {
		t.Skip("run by TestTwoUsers")
	}
	fallback := "/tmp/airlock-" + strconv.Itoa(os.Geteuid())
	if _, err := os.Lstat(fallback); err != nil {
		t.Cleanup(func() { os.Remove(fallback) }) // made here: removed (if empty)
	}
	dir, err := holder.Dir()
	if err != nil {
		t.Fatal(err)
	}
	info := start(t, dir, filepath.Join(t.TempDir(), "audit.jsonl"))
	defer stop(dir, info.ID)
	c, err := holder.Dial(dir, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if res, err := execStep(t, c, sh("id -u", &out)); err != nil || res.ExitCode != 0 || out.String() != "65534\n" {
		t.Fatalf("nobody's step: %+v %v %q", res, err, out.String())
	}
	if _, err := holder.Dial(filepath.Dir(rootSock), strings.TrimSuffix(filepath.Base(rootSock), ".sock")); err == nil {
		t.Error("nobody found root's session")
	}
	if n, err := rawInfo(rootSock); n > 0 || err == nil {
		t.Errorf("root's holder answered nobody: %d bytes, %v", n, err)
	}
	if infos, err := holder.List(dir); err != nil || len(infos) != 1 || infos[0].ID != info.ID {
		t.Errorf("nobody's list: %+v %v", infos, err)
	}
	fmt.Printf("SESSION %s %s %s\n", dir, info.ID, info.Socket)
	io.Copy(io.Discard, os.Stdin)
	if _, _, err := c.Stop(nil, nil); err != nil {
		t.Fatal(err)
	}
	waitGone(t, info.Watchdog)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in nobody's runtime directory: %v", entries)
	}
}

// rawInfo connects to sock and asks for the session's info by hand,
// returning how many bytes came back.
func rawInfo(sock string) (int, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.Write([]byte("\x00\x00\x00\x0e{\"op\":\"info\"}"))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 512)
	return conn.Read(b)
}

// TestHolderRefusesOtherUsers: a holder answers no connection from another
// user, even one that can reach its socket.
func TestHolderRefusesOtherUsers(t *testing.T) {
	testutil.RequireRoot(t)
	dir, _, info := newSession(t)
	// Open the way to the socket, as a mistaken chmod would.
	openWay(t, dir)
	if err := os.Chmod(info.Socket, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, "AIRLOCK_TEST_DIAL="+info.Socket))
	cmd.Args = append(cmd.Args, "-test.run=^TestDialAsNobody$", "-test.v")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDialAsNobody") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	os.Chmod(dir, 0o700)
	checkAnswers(t, dir, info.ID)
}

// TestDialAsNobody runs as uid 65534 for TestHolderRefusesOtherUsers:
// it reaches root's holder's socket and must get nothing from it.
func TestDialAsNobody(t *testing.T) {
	sock := os.Getenv("AIRLOCK_TEST_DIAL")
	if sock == "" || os.Geteuid() == 0 {
		t.Skip("run by TestHolderRefusesOtherUsers")
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the test wants the socket reachable: %v", err)
	}
	if n, err := rawInfo(sock); n > 0 || err == nil {
		t.Fatalf("root's holder answered uid %d: %d bytes", os.Geteuid(), n)
	}
	// Dial refuses the socket before connecting: it is root's.
	if _, err := holder.Dial(filepath.Dir(sock), strings.TrimSuffix(filepath.Base(sock), ".sock")); err == nil ||
		!strings.Contains(err.Error(), "owned by another user") {
		t.Fatalf("Dial of root's socket: %v", err)
	}
}

// TestClientRefusesImpostor: a socket served by another user is refused
// by the client, even where its file looks like this user's.
func TestClientRefusesImpostor(t *testing.T) {
	testutil.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	openWay(t, dir)
	os.Chmod(dir, 0o777)
	sock := filepath.Join(dir, "ses-impostor.sock")
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t))
	cmd.Args = append(cmd.Args[:1], "serve-as-is", sock)
	cmd.Stdout = nil
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line := make([]byte, 6)
	if _, err := stdout.Read(line); err != nil || string(line) != "ready\n" {
		t.Fatalf("impostor: %q %v", line, err)
	}
	if _, err := holder.Dial(dir, "ses-impostor"); err == nil || !strings.Contains(err.Error(), "owned by another user") {
		t.Fatalf("Dial of nobody's socket: %v", err)
	}
	// Made to look like root's, it is still served by nobody.
	if err := os.Chown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	c, err := holder.Dial(dir, "ses-impostor")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(); err == nil || !strings.Contains(err.Error(), "served by uid 65534") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Info from an impostor (one line, why): %v", err)
	}
}

// serveAsIs listens on sock and accepts forever: an impostor for
// TestClientRefusesImpostor.
func serveAsIs(sock string) int {
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return 1
	}
	os.Chmod(sock, 0o666)
	os.Stdout.WriteString("ready\n")
	for {
		c, err := lis.Accept()
		if err != nil {
			return 1
		}
		c.Write([]byte("\x00\x00\x00\x02{}"))
		c.Close()
	}
}

// TestDirRefusesUnsafe: the runtime directory is refused when it is a
// link, another user's, or open to others.
func TestDirRefusesUnsafe(t *testing.T) {
	testutil.RequireRoot(t)
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil { // t.TempDir makes it 0755
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", base)
	d, err := holder.Dir()
	if err != nil || d != filepath.Join(base, "airlock") {
		t.Fatalf("Dir = %q, %v", d, err)
	}
	for name, spoil := range map[string]func(string) error{
		"open to others": func(p string) error { return os.Chmod(p, 0o755) },
		"another user's": func(p string) error { return os.Chown(p, testutil.NobodyID, testutil.NobodyID) },
		"a link": func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(t.TempDir(), p)
		},
	} {
		os.RemoveAll(d)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := spoil(d); err != nil {
			t.Fatal(err)
		}
		if _, err := holder.Dir(); err == nil {
			t.Errorf("%s: Dir accepted it", name)
		}
	}
	// An XDG_RUNTIME_DIR that is not this user's own is not used at all.
	if _, err := os.Lstat("/tmp/airlock-0"); err != nil {
		t.Cleanup(func() { os.Remove("/tmp/airlock-0") }) // made here: removed (if empty)
	}
	os.Chmod(base, 0o777)
	if d, err := holder.Dir(); err != nil || d != "/tmp/airlock-0" {
		t.Errorf("with an open XDG_RUNTIME_DIR: Dir = %q, %v", d, err)
	}
}

// TestSocketPathTooLong: a session whose socket's path would be longer
// than a unix socket's may be is refused with the fix (a state directory
// deep in a home directory can make it so), not with bind's EINVAL.
func TestSocketPathTooLong(t *testing.T) {
	testutil.RequireRoot(t)
	dir := filepath.Join(privateDir(t), strings.Repeat("d", 100))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := holder.Start(context.Background(), holder.Config{Dir: dir, PolicyName: "test.json", Policy: []byte(testPolicy),
		Audit: filepath.Join(t.TempDir(), "audit.jsonl")})
	if err == nil || !strings.Contains(err.Error(), "longer than a unix socket's may be (107): set XDG_RUNTIME_DIR to a shorter directory") {
		t.Fatalf("Start: %v", err)
	}
}

// openWay makes dir and the test's directories above it enterable by
// everyone.
func openWay(t *testing.T, dir string) {
	t.Helper()
	for p := dir; p != "/tmp" && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGone waits until process pid has exited and been reaped (the
// watchdog by Start, the holder by the watchdog).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, "process "+strconv.Itoa(pid)+" to exit", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return err != nil
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pidsIn lists the processes of the pid namespace pidns.
func pidsIn(pidns string) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if ns, err := os.Readlink("/proc/" + p.Name() + "/ns/pid"); err == nil && ns == pidns {
			out = append(out, p.Name())
		}
	}
	return out
}

// TestStartLeaksNothingOfTheCaller: a descriptor that the caller of
// session start leaked (not close-on-exec, as a harness may) is not kept
// open by the session's watchdog or holder, which live on.
func TestStartLeaksNothingOfTheCaller(t *testing.T) {
	testutil.RequireRoot(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETFD, 0); err != nil { // inheritable
		t.Fatal(err)
	}
	newSession(t)
	w.Close()
	r.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the caller's pipe is still held open after start: %v", err)
	}
}

// TestHolderEndsWithItsSession: a session that passes its idle timeout is
// closed, and its holder and watchdog exit, leaving nothing.
func TestHolderEndsWithItsSession(t *testing.T) {
	testutil.RequireRoot(t)
	dir, auditFile := privateDir(t), filepath.Join(t.TempDir(), "audit.jsonl")
	pol := strings.TrimSuffix(testPolicy, "}") + `, "session": {"idleSeconds": 0.3}}`
	info, err := holder.Start(context.Background(), holder.Config{Dir: dir, PolicyName: "test.json", Policy: []byte(pol), Audit: auditFile})
	if err != nil {
		t.Fatal(err)
	}
	defer stop(dir, info.ID)
	waitGone(t, info.Pid)
	waitGone(t, info.Watchdog)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the runtime directory: %v", entries)
	}
	testutil.CheckNoSandboxLeft(t, info.ID)
	b, _ := os.ReadFile(auditFile)
	if !strings.Contains(string(b), "no command for idleSeconds 0.3") {
		t.Errorf("no idle teardown record in\n%s", b)
	}
}
