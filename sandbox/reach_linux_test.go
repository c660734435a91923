package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
	"golang.org/x/sys/unix"
)

// airlockConfig runs airlock's own payload name (package payload) inside.
func airlockConfig(name string, args ...string) Config {
	return payloadConfig("airlock", append([]string{name}, args...)...)
}

// airlockStep is airlockConfig for a session's step.
func airlockStep(name string, args ...string) Step {
	return payloadStep("airlock", append([]string{name}, args...)...)
}

// lastReport is the last report of a payload's output; it fails t when
// there is none.
func lastReport(t *testing.T, out string) payload.Report {
	t.Helper()
	reps := payload.Parse([]byte(out))
	if len(reps) == 0 {
		t.Fatalf("the payload reported nothing: output %q", out)
	}
	return reps[len(reps)-1]
}

// TestSignalsToInit sends every signal, 1 to 64, to pid 1 from inside,
// each way a process can (kill, rt_sigqueueinfo and pidfd_send_signal
// with a queued siginfo, a pipe's F_SETSIG signal), in a run and in a
// session: the init survives, the run's result is the command's, no Go
// crash dump reaches the output, and the session's next step runs.
func TestSignalsToInit(t *testing.T) {
	testutil.RequireRoot(t)
	testSignalsToInit(t)
}

func testSignalsToInit(t *testing.T) {
	t.Run("run", func(t *testing.T) {
		res, out, errOut := run(t, airlockConfig("signal-init"))
		checkSignalled(t, res, out+errOut)
	})
	t.Run("session", func(t *testing.T) {
		ss := startSession(t, Config{})
		for i := range 2 {
			res, out := execOut(t, ss, airlockStep("signal-init"))
			if t.Failed() {
				return
			}
			t.Logf("step %d: %s", i+1, strings.TrimSpace(out))
			checkSignalled(t, res, out)
		}
		if res, out := execOut(t, ss, shellStep("echo later")); res.ExitCode != 0 || out != "later\n" {
			t.Fatalf("the step after the signals: %+v %q", res, out)
		}
	})
}

func checkSignalled(t *testing.T, res Result, out string) {
	t.Helper()
	for _, crash := range []string{"goroutine ", "SIGSEGV", "SIGABRT", "PC=", ".go:"} {
		if strings.Contains(out, crash) {
			t.Fatalf("a crash dump reached the output (%q): %s", crash, out)
		}
	}
	r := lastReport(t, out)
	if r.Succeeded || res.ExitCode != 0 || res.Signal != 0 || res.KilledBy != "" {
		t.Fatalf("result %+v, report %+v", res, r)
	}
	t.Logf("%s", r.Evidence)
}

// TestInitDeathReported kills the init from the host, as a crash would
// end it, in a run and in a session: the run's result says the init died
// (no cap, no 137-style SIGKILL of the target), and the session's Exec
// fails with ErrInitDied.
func TestInitDeathReported(t *testing.T) {
	testutil.RequireRoot(t)
	t.Run("run", func(t *testing.T) {
		cfg := payloadConfig("sleep")
		s, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(); err != nil {
			s.Kill()
			t.Fatal(err)
		}
		unix.Kill(s.cmd.Process.Pid, unix.SIGKILL)
		res, err := s.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.InitDied, "signal 9 (SIGKILL)") || res.KilledBy != "" || res.Signal != 0 || res.ExitCode != -1 {
			t.Fatalf("result %+v, want the init's death reported", res)
		}
	})
	t.Run("session", func(t *testing.T) {
		ss := startSession(t, Config{})
		go func() {
			time.Sleep(200 * time.Millisecond)
			unix.Kill(ss.Pid(), unix.SIGKILL)
		}()
		_, err := ss.Exec(context.Background(), payloadStep("sleep"))
		if !errors.Is(err, ErrInitDied) || !errors.Is(err, ErrSessionEnded) {
			t.Fatalf("Exec: %v, want ErrInitDied", err)
		}
	})
	t.Run("kill", func(t *testing.T) {
		s, err := Start(context.Background(), payloadConfig("sleep"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(); err != nil {
			s.Kill()
			t.Fatal(err)
		}
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		if res, _ := s.Wait(); res.InitDied != "" {
			t.Fatalf("Kill reported as the init's death: %+v", res)
		}
	})
}

// TestMPTCPRefused connects from inside to the proxy's port and to a
// listener on the sandbox's lo, over TCP and over MPTCP: TCP goes as
// Landlock says (the proxy's port only), MPTCP is refused by the filter
// everywhere (Landlock's TCP rule does not cover it).
func TestMPTCPRefused(t *testing.T) {
	testutil.RequireRoot(t)
	testMPTCPRefused(t)
}

func testMPTCPRefused(t *testing.T) {
	for target, tcp := range map[string]string{"proxy": "connected", "inside": "EACCES"} {
		cfg := airlockConfig("mptcp-connect", target)
		cfg.Proxy = true
		_, out, errOut := run(t, cfg)
		r := lastReport(t, out+errOut)
		if r.Succeeded || r.Detail["mptcp"] != "EPROTONOSUPPORT" || r.Detail["tcp"] != tcp {
			t.Errorf("%s: %+v, want TCP %s and MPTCP EPROTONOSUPPORT", target, r, tcp)
		}
	}
}

// TestHostUnixSocketUnreachable binds a host directory read-only and,
// once the sandbox is built, has a host process listen on a unix socket
// in it: a connect from inside fails (no unix socket can be made), and
// the listener sees nothing.
func TestHostUnixSocketUnreachable(t *testing.T) {
	testutil.RequireRoot(t)
	testHostUnixSocketUnreachable(t)
}

func testHostUnixSocketUnreachable(t *testing.T) {
	dir := sharedDir(t)
	sock := dir + "/host.sock"
	for _, target := range []string{sock, "@airlock-test-" + strconv.Itoa(os.Getpid())} {
		cfg := airlockConfig("unix-connect", target)
		cfg.ReadOnly = append(slices.Clone(defaultReadOnly), dir)
		var out bytes.Buffer
		cfg.Stdout, cfg.Stderr = &out, &out
		s, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The host's listener, made after the sandbox was built.
		ln, err := net.Listen("unix", target)
		if err != nil {
			s.Kill()
			t.Fatal(err)
		}
		if !strings.HasPrefix(target, "@") {
			// Writable by all: only the sandbox, not the file's mode,
			// may keep the connect out.
			if err := os.Chmod(target, 0o777); err != nil {
				s.Kill()
				t.Fatal(err)
			}
		}
		var hits atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				hits.Add(1)
				c.Close()
			}
		}()
		if err := s.Release(); err != nil {
			s.Kill()
			t.Fatal(err)
		}
		if _, err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		ln.Close()
		r := lastReport(t, out.String())
		if r.Succeeded || r.Errno != "EACCES" || hits.Load() != 0 {
			t.Errorf("%s: %+v, %d connections accepted: want EACCES and none", target, r, hits.Load())
		}
	}
}

// sharedDir makes a directory outside /tmp (which the sandbox makes
// itself, and refuses to bind) that uid 65534 may enter, for a test to
// bind; it is removed at cleanup.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "airlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRealPathRefused asks for /run through a symbolic link in a path
// component outside /run, as ReadOnly, ReadWrite and a Bind: Start
// refuses each by the real path, before anything is built.
func TestRealPathRefused(t *testing.T) {
	testutil.RequireRoot(t)
	testRealPathRefused(t)
}

func testRealPathRefused(t *testing.T) {
	link := sharedDir(t) + "/lock"
	if err := os.Symlink("/run", link); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{ReadOnly: append(slices.Clone(defaultReadOnly), link+"/user")},
		{ReadWrite: []string{link + "/lock"}},
		{Binds: []Bind{{Host: link + "/systemd", Inside: "/srv/x"}}},
	} {
		base := payloadConfig("echo")
		base.ReadOnly, base.ReadWrite, base.Binds = cfg.ReadOnly, cfg.ReadWrite, append(base.Binds, cfg.Binds...)
		s, err := Start(context.Background(), base)
		if err == nil {
			s.Kill()
		}
		if err == nil || !strings.Contains(err.Error(), "its real path is /run/") {
			t.Errorf("%+v: Start = %v, want the real path refused", cfg, err)
		}
	}
}

// identityFiles are the files TestOwnIdentity reads inside.
var identityFiles = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/hostname", "/etc/machine-id", "/etc/mailname",
	"/proc/sys/kernel/random/boot_id", "/proc/cmdline"}

// readInside runs the files payload in cfg and returns what it read.
func readInside(t *testing.T, cfg Config) map[string]string {
	t.Helper()
	res, out, errOut := run(t, cfg)
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); res.ExitCode != 0 || err != nil {
		t.Fatalf("result %+v, output %q %q: %v", res, out, errOut, err)
	}
	return got
}

// TestOwnIdentity reads, from inside a sandbox that binds the host's
// /etc, the files that would name the host's resolver, names and ids:
// each is the sandbox's own, and nothing of the host's shows.
func TestOwnIdentity(t *testing.T) {
	testutil.RequireRoot(t)
	testOwnIdentity(t)
}

func testOwnIdentity(t *testing.T) {
	got := readInside(t, payloadConfig("files", identityFiles...))
	host := map[string]string{}
	for _, p := range identityFiles {
		b, _ := os.ReadFile(p)
		host[p] = string(b)
	}
	if r := got["/etc/resolv.conf"]; strings.Contains(r, "nameserver") || !strings.Contains(r, "airlock") {
		t.Errorf("resolv.conf inside: %q", r)
	}
	if h := got["/etc/hosts"]; h != "127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost ip6-loopback\n" {
		t.Errorf("hosts inside: %q", h)
	}
	for _, p := range []string{"/etc/hostname", "/etc/mailname"} {
		_, err := os.Stat(p)
		if got[p] != "airlock\n" && (err == nil || !strings.Contains(got[p], "no such file")) {
			t.Errorf("%s inside: %q (on the host: %v)", p, got[p], err)
		}
	}
	for _, p := range []string{"/etc/machine-id", "/proc/sys/kernel/random/boot_id"} {
		if g := got[p]; g == host[p] || len(g) < 33 || strings.HasPrefix(g, "error") {
			t.Errorf("%s inside %q, the host's %q: want the sandbox's own", p, g, host[p])
		}
	}
	if got["/proc/cmdline"] != "" {
		t.Errorf("/proc/cmdline inside: %q, want it masked", got["/proc/cmdline"])
	}
}

// TestOwnIdentityImageRoot does the same in an image root whose /etc
// reaches its files through symbolic links and holds SSH host keys and a
// network configuration: the links are followed inside, the keys and
// the configuration masked.
func TestOwnIdentityImageRoot(t *testing.T) {
	testutil.RequireRoot(t)
	root := filepath.Join(t.TempDir(), "rootfs")
	files := rootfsFiles(t)
	files["etc/hosts.real"] = "=10.1.2.3 secret-host\n"
	files["etc/ssh/ssh_host_ed25519_key.pub"] = "=ssh-ed25519 AAAA root@secret-host\n"
	files["etc/network/interfaces"] = "=address 10.1.2.3\n"
	writeRootfs(t, root, files)
	for link, target := range map[string]string{"etc/hosts": "hosts.real", "etc/resolv.conf": "../run/systemd/resolve/stub-resolv.conf"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{"/etc/hosts", "/etc/hosts.real", "/etc/resolv.conf", "/etc/ssh/ssh_host_ed25519_key.pub", "/etc/network/interfaces"}
	cfg := payloadConfig("files", paths...)
	cfg.Env = []string{payloadEnv + "=files"}
	cfg.Root, cfg.ReadOnly = root, nil
	got := readInside(t, cfg)
	for _, p := range paths[:2] {
		if !strings.HasPrefix(got[p], "127.0.0.1\tlocalhost airlock\n") {
			t.Errorf("%s inside: %q, want the sandbox's own", p, got[p])
		}
	}
	if !strings.Contains(got["/etc/resolv.conf"], "no such file") {
		t.Errorf("the dangling resolv.conf link: %q", got["/etc/resolv.conf"])
	}
	for _, p := range paths[3:] {
		if got[p] != "" {
			t.Errorf("%s inside: %q, want it masked empty", p, got[p])
		}
	}
}

// groupsEnv names the file TestSupplementaryGroupsInner reads.
const groupsEnv = "AIRLOCK_TEST_GROUP_FILE"

// testGroup is the supplementary group TestSupplementaryGroups gives
// the rootless caller: a number no account uses.
const testGroup = 4242

// TestSupplementaryGroups runs a rootless sandbox for a caller in a
// supplementary group that owns a 0640 file: inside, the file is
// unreadable (the group was dropped: newgidmap and a subordinate range
// are there), or the run is refused with the ways out. With newgidmap
// installed it plays both: without a range for uid 65534, then with one
// added to /etc/subgid for the test.
func TestSupplementaryGroups(t *testing.T) {
	testutil.RequireRoot(t)
	dir := sharedDir(t)
	file := dir + "/group-secret"
	if err := os.WriteFile(file, []byte("group secret\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(file, 0, testGroup); err != nil {
		t.Fatal(err)
	}
	groups := []uint32{testGroup}
	t.Run("refused", func(t *testing.T) {
		out := testutil.RunTestAsNobodyInGroups(t, "TestSupplementaryGroupsInner", groups, groupsEnv+"="+file)
		if !strings.Contains(out, "refused: ") {
			t.Fatalf("the run was not refused:\n%s", out)
		}
		t.Log(out)
	})
	t.Run("dropped", func(t *testing.T) {
		if _, err := exec.LookPath("newgidmap"); err != nil {
			t.Skip("newgidmap is not installed (Debian: uidmap)")
		}
		addSubGID(t, "nobody:1879048192:65536")
		out := testutil.RunTestAsNobodyInGroups(t, "TestSupplementaryGroupsInner", groups, groupsEnv+"="+file)
		if !strings.Contains(out, "dropped: ") {
			t.Fatalf("the groups were not dropped:\n%s", out)
		}
		t.Log(out)
	})
}

// addSubGID adds line to /etc/subgid for the test and puts the file back
// as it was at cleanup.
func addSubGID(t *testing.T, line string) {
	t.Helper()
	old, err := os.ReadFile(idmap.SubGIDFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(idmap.SubGIDFile, old, 0o644); err != nil {
			t.Errorf("restore %s: %v", idmap.SubGIDFile, err)
		}
	})
	if err := os.WriteFile(idmap.SubGIDFile, append(append(old, line...), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSupplementaryGroupsInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	file := os.Getenv(groupsEnv)
	if file == "" {
		t.Skip("run by TestSupplementaryGroups")
	}
	testMemory = 1 << 44
	if _, err := os.ReadFile(file); err != nil {
		t.Fatalf("the caller's group does not grant the file outside: %v", err)
	}
	g, err := idmap.Inspect()
	if err != nil || !slices.Contains(g.Extra, testGroup) {
		t.Fatalf("groups %+v, %v: want %d among them", g, err, testGroup)
	}
	cfg := payloadConfig("files", file)
	cfg.ReadOnly = append(slices.Clone(defaultReadOnly), filepath.Dir(file))
	s, err := Start(context.Background(), cfg)
	if !g.CanDrop() {
		if err == nil {
			s.Kill()
		}
		if !errors.Is(err, ErrRequirement) || !errors.Is(err, idmap.ErrGroups) || !strings.Contains(err.Error(), "setpriv --clear-groups") {
			t.Fatalf("Start = %v, want the groups refused with the ways out", err)
		}
		t.Logf("refused: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	s.Kill()
	got := readInside(t, cfg)
	if !strings.Contains(got[file], "permission denied") {
		t.Fatalf("inside, the group's file reads %q: want permission denied", got[file])
	}
	t.Logf("dropped: %s", got[file])
}
