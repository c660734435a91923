package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/limits"
)

// testMemory is the memory cap of test runs. The rootless tests raise it:
// without a memory cgroup it becomes RLIMIT_DATA, which a -race binary's
// ThreadSanitizer shadow (the init and the payloads) cannot live under.
var testMemory int64 = 256 << 20

func testCaps() limits.Caps {
	return limits.Caps{
		Wall: 30 * time.Second, CPU: 20 * time.Second, MemoryBytes: testMemory,
		Tasks: 64, DiskWriteBytes: 16 << 20, OpenFiles: 128, OutputBytes: 16 << 20,
	}
}

// payloadConfig runs the test binary's payload name inside.
func payloadConfig(name string, args ...string) Config {
	cfg := Config{
		Path: SelfPath,
		Args: append([]string{SelfPath}, args...),
		Env:  []string{payloadEnv + "=" + name, "PATH=/usr/bin:/bin"},
		Caps: testCaps(),
	}
	if raceEnv != "" {
		// The payload is this test binary: no second's sleep at its exit.
		cfg.Env = append(cfg.Env, raceEnv)
	}
	cfg.BindSelf()
	return cfg
}

// run starts, releases and waits, failing the test on any setup error.
func run(t *testing.T, cfg Config) (Result, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &errb
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatalf("Release: %v", err)
	}
	res, err := s.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return res, out.String(), errb.String()
}

func TestRunEcho(t *testing.T) {
	testutil.RequireRoot(t)
	res, out, errOut := run(t, payloadConfig("echo", "hello"))
	if res.ExitCode != 0 || res.Signal != 0 || res.KilledBy != "" {
		t.Fatalf("result %+v, stderr %q", res, errOut)
	}
	if !strings.Contains(out, "hello") {
		t.Fatalf("stdout %q, want hello", out)
	}
	t.Logf("receipt: %v", res.Receipt)
}

// canaries makes a host file and a host loopback listener that must stay
// unreachable from inside.
func canaries(t *testing.T) (file, addr string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(file, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			t.Errorf("the host's canary listener was reached from %v", c.RemoteAddr())
			c.Close()
		}
	}()
	return file, lis.Addr().String()
}

// wantProbes checks the probe results by name, each with its fixed detail.
func wantProbes(t *testing.T, res []ProbeResult, skip ...string) {
	t.Helper()
	want := map[string]string{
		"uid":             "uid and gid are 65534",
		"caps":            "all five capability sets are empty",
		"no_new_privs":    "NoNewPrivs is 1",
		"seccomp":         "Seccomp is 2",
		"landlock":        "a write outside the writable directories is refused",
		"interfaces":      "lo is the only interface",
		"routes":          "no route except through lo",
		"host_dirs":       "/root, /home unreachable",
		"canary_file":     "unreachable",
		"canary_listener": "unreachable",
	}
	seen := map[string]bool{}
	for _, r := range res {
		seen[r.Name] = true
		if slices.Contains(skip, r.Name) {
			continue
		}
		if w, ok := want[r.Name]; ok && (!r.OK || !strings.Contains(r.Detail, w)) {
			t.Errorf("probe %s: ok=%v %q, want ok and %q", r.Name, r.OK, r.Detail, w)
		}
		if _, ok := want[r.Name]; !ok && !r.OK {
			t.Errorf("probe %s failed: %s", r.Name, r.Detail)
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("probe %s did not run", n)
		}
	}
}

// seccompSkip lists the probes this build cannot pass yet.
func seccompSkip() []string {
	if seccompAvailable() {
		return nil
	}
	return []string{"seccomp"}
}

func TestProbesFromTarget(t *testing.T) {
	testutil.RequireRoot(t)
	file, addr := canaries(t)
	res, out, errOut := run(t, payloadConfig("probe", file, addr))
	if res.ExitCode != 0 {
		t.Fatalf("result %+v, stderr %q", res, errOut)
	}
	var probes []ProbeResult
	if err := json.Unmarshal([]byte(out), &probes); err != nil {
		t.Fatalf("payload output %q: %v", out, err)
	}
	wantProbes(t, probes, seccompSkip()...)
	for _, p := range probes {
		if p.Name == "fds" && !p.OK {
			t.Errorf("fds: %s", p.Detail)
		}
	}
}

func TestProbesFromInit(t *testing.T) {
	testutil.RequireRoot(t)
	file, addr := canaries(t)
	if !seccompAvailable() {
		// The init's probes fail closed without seccomp: show that.
		cfg := payloadConfig("exit")
		cfg.Probes = &ProbeRequest{CanaryFile: file, CanaryAddr: addr}
		_, err := Start(context.Background(), cfg)
		if !errors.Is(err, ErrProbe) || !strings.Contains(err.Error(), "seccomp: Seccomp is not 2") {
			t.Fatalf("Start without seccomp = %v, want ErrProbe naming seccomp", err)
		}
		return
	}
	cfg := payloadConfig("exit")
	cfg.Probes = &ProbeRequest{CanaryFile: file, CanaryAddr: addr}
	res, _, _ := run(t, cfg)
	if res.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7", res.ExitCode)
	}
}

func TestAttacksRefused(t *testing.T) {
	testutil.RequireRoot(t)
	testAttacks(t)
}

// testAttacks tries the escapes of payloadAttacks from inside and checks
// each refusal's errno.
func testAttacks(t *testing.T) {
	res, out, errOut := run(t, payloadConfig("attacks"))
	if res.ExitCode != 0 {
		t.Fatalf("result %+v, stderr %q", res, errOut)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("payload output %q: %v", out, err)
	}
	// Each attack with the refusals that count as contained.
	want := map[string][]string{
		"write_usr":      {"read-only file system", "permission denied"},
		"stat_root":      {"no such file or directory"},
		"open_init_exe":  {"permission denied", "operation not permitted"},
		"write_self_exe": {"read-only file system", "text file busy", "permission denied"},
		"init_root":      {"permission denied", "operation not permitted"},
		"ptrace_init":    {"operation not permitted"},
		"mount":          {"operation not permitted"},
		"clone_newuser":  {"no space left on device", "operation not permitted"},
		"unshare_mount":  {"operation not permitted"},
		"raw_socket":     {"operation not permitted"},
		"packet_socket":  {"operation not permitted", "address family not supported by protocol"},
		"sysctl_write":   {"permission denied", "read-only file system"},
		"netlink_socket": {"operation not permitted", "address family not supported by protocol"},
		"setuid_root":    {"operation not permitted", "invalid argument"},
		"chroot":         {"operation not permitted"},
		"keyctl":         {"operation not permitted", "function not implemented", "disk quota exceeded", "permission denied"},
	}
	if !seccompAvailable() {
		// Without the filter, keyctl works on the sandbox's own fresh
		// session keyring (and per-namespace user keyring) only.
		delete(want, "keyctl")
		delete(want, "netlink_socket")
	}
	for name, ok := range want {
		g, seen := got[name]
		if !seen {
			t.Errorf("%s: not tried", name)
			continue
		}
		if g == "" {
			t.Errorf("%s: succeeded inside the sandbox", name)
			continue
		}
		if !slices.Contains(ok, g) {
			t.Errorf("%s: refused with %q, want one of %q", name, g, ok)
		}
	}
}
