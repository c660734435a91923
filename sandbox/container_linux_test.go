package sandbox

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// refusedEnv marks a re-run of the test binary under a seccomp filter that
// refuses network namespaces, as a container's profile can:
// "netns" refuses them, "netns+landlock" the Landlock calls too.
const refusedEnv = "AIRLOCK_TEST_REFUSED"

// TestSharedNetwork runs sandboxes where the host refuses a network
// namespace (docs/sandbox.md, "Inside a container"), as root and as
// nobody: the sandbox shares the host's network, and from inside a TCP
// connect to a host listener on another port, UDP, MPTCP, a TCP bind and
// a listen are refused while the proxy's port is reached.
func TestSharedNetwork(t *testing.T) {
	testutil.RequireRoot(t)
	if initproc.LandlockABI() < 4 {
		t.Skip("Landlock ABI 4 (TCP rules) needed")
	}
	testutil.RunTestInNamespaces(t, "TestSharedNetworkInner", 0, refusedEnv+"=netns")
	testutil.RunTestAsNobody(t, "TestSharedNetworkInner", refusedEnv+"=netns")
}

// TestUnenforcedEgress runs where the host refuses a network namespace
// and Landlock: Start refuses, unless Config.Weaker accepts
// egress-unenforced, and the receipt then says the egress is not held.
func TestUnenforcedEgress(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RunTestInNamespaces(t, "TestUnenforcedEgressInner", 0, refusedEnv+"=netns+landlock")
}

func TestSharedNetworkInner(t *testing.T) {
	if os.Getenv(refusedEnv) != "netns" {
		t.Skip("run by TestSharedNetwork")
	}
	refuseNamespaces(t, false)
	if os.Geteuid() != 0 {
		testMemory = 1 << 44 // RLIMIT_DATA without a cgroup: the race detector's shadow
	}
	host := testutil.CountingListener(t)
	udp := testutil.CountingUDP(t)

	// The receipt and the start-up probes of the mode.
	file, addr := canaries(t)
	cfg := payloadConfig("echo", "hello")
	cfg.Proxy = true
	cfg.Probes = &ProbeRequest{CanaryFile: file, CanaryAddr: addr}
	res, out, errOut := run(t, cfg)
	if res.ExitCode != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("result %+v, output %q %q", res, out, errOut)
	}
	for key, want := range map[string]string{
		"namespaces": "no network namespace: the host refuses one",
		"network":    "the host's network namespace (the host refuses a new one); egress proxy listener 127.0.0.1:",
		"landlock":   "(on any address: Landlock's rules name ports only); no TCP bind",
		"seccomp":    "second filter (no network namespace of its own): UDP sockets and listen refused",
	} {
		if !strings.Contains(res.Receipt[key], want) {
			t.Errorf("receipt %s = %q, want it to say %q", key, res.Receipt[key], want)
		}
	}

	for _, c := range []struct {
		args   []string
		detail map[string]string
		errno  string
	}{
		{args: []string{"connect", host.Addr}, errno: "EACCES"},
		{args: []string{"udp-send", udp.Addr}, errno: "EACCES"},
		{args: []string{"tcp-listen", "bind"}, errno: "EACCES"},
		{args: []string{"tcp-listen", "autobind"}, errno: "EACCES"},
		{args: []string{"mptcp-connect", "proxy"}, detail: map[string]string{"mptcp": "EPROTONOSUPPORT", "tcp": "connected"}},
	} {
		cfg := airlockConfig(c.args[0], c.args[1:]...)
		cfg.Proxy = true
		_, out, errOut := run(t, cfg)
		r := lastReport(t, out+errOut)
		if r.Succeeded || c.errno != "" && r.Errno != c.errno {
			t.Errorf("%v: %+v, want refused with %s", c.args, r, c.errno)
		}
		for k, v := range c.detail {
			if r.Detail[k] != v {
				t.Errorf("%v: %s = %q, want %q (%+v)", c.args, k, r.Detail[k], v, r)
			}
		}
	}
	if n := host.Hits.Load(); n != 0 {
		t.Errorf("the host's listener was reached %d times from inside", n)
	}
	if n := udp.Hits.Load(); n != 0 {
		t.Errorf("the host's UDP socket got %d datagrams from inside", n)
	}

	// require fails closed: netns, and the egress proxy as the only way
	// out, are not what this host gives.
	for _, req := range []string{requireNetNS, requireEgressProxy} {
		cfg := payloadConfig("echo", "ran")
		cfg.Proxy = true
		cfg.Require = []string{req}
		if s, err := Start(context.Background(), cfg); err == nil {
			s.Kill()
			t.Errorf("require %s: Start passed", req)
		} else if !errors.Is(err, ErrRequirement) || !strings.Contains(err.Error(), "refuses a new network namespace") {
			t.Errorf("require %s: %v, want ErrRequirement naming the refusal", req, err)
		}
	}
}

func TestUnenforcedEgressInner(t *testing.T) {
	if os.Getenv(refusedEnv) != "netns+landlock" {
		t.Skip("run by TestUnenforcedEgress")
	}
	refuseNamespaces(t, true)
	if initproc.LandlockABI() != 0 {
		t.Fatal("the filter did not hide Landlock")
	}
	host := testutil.CountingListener(t)
	cfg := airlockConfig("connect", host.Addr)
	cfg.Proxy = true
	if s, err := Start(context.Background(), cfg); err == nil {
		s.Kill()
		t.Fatal("Start passed without a network namespace or Landlock")
	} else if !errors.Is(err, ErrRequirement) || !strings.Contains(err.Error(), `"weakerModes": ["egress-unenforced"]`) {
		t.Fatalf("Start: %v, want ErrRequirement naming the weaker mode", err)
	}
	cfg.Weaker = []string{weakerEgressUnenforced}
	res, out, errOut := run(t, cfg)
	if r := lastReport(t, out+errOut); !r.Succeeded || host.Hits.Load() == 0 {
		t.Errorf("the accepted weaker mode held egress after all: %+v", r)
	}
	if want := "NOT kernel-enforced (weakerModes egress-unenforced)"; !strings.Contains(res.Receipt["network"], want) {
		t.Errorf("receipt network = %q, want it to say %q", res.Receipt["network"], want)
	}
	if cfg.Weaker = []string{"egress"}; true {
		if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), `weaker mode "egress": unknown`) {
			t.Errorf("an unknown weaker mode: %v", err)
		}
	}
}

// refuseNamespaces installs on every thread of this process a filter
// that refuses what a container's seccomp profile may: clone and unshare
// with CLONE_NEWNET (EPERM), clone3 (ENOSYS, its flags unreadable), and
// with landlock the Landlock calls (ENOSYS). It cannot be undone: only a
// re-run test calls it.
func refuseNamespaces(t *testing.T, landlock bool) {
	t.Helper()
	hideLandlock := uint32(0xffffffff)
	if landlock {
		hideLandlock = unix.SYS_LANDLOCK_CREATE_RULESET
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	enosys := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipTrue: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_UNSHARE, SkipTrue: 3},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipTrue: 6},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: hideLandlock, SkipTrue: 5},
		bpf.RetConstant{Val: allow},
		bpf.LoadAbsolute{Off: 16, Size: 4}, // the flags' low word (little-endian)
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_NEWNET, SkipFalse: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: enosys},
	})
	if err != nil {
		t.Fatal(err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, r := range prog {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if os.Geteuid() != 0 {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		t.Fatalf("install the test's filter: %v", e)
	}
	runtime.KeepAlive(filter)
	if err := unix.Unshare(unix.CLONE_NEWNET); !errors.Is(err, unix.EPERM) {
		t.Fatalf("unshare(CLONE_NEWNET) under the test's filter: %v, want EPERM", err)
	}
}

// TestHostProc runs a sandbox where the host's /proc has a part masked
// by a mount over it, as a container runtime masks its /proc: the kernel
// refuses a fresh /proc, and the sandbox gets the host's, with its masks
// (a static build), or a clear refusal (a build with cgo, whose psx needs
// a /proc of the init's pid namespace); require procfs refuses it.
func TestHostProc(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RunTestInNamespaces(t, "TestHostProcInner", unix.CLONE_NEWNS, refusedEnv+"=proc")
}

func TestHostProcInner(t *testing.T) {
	if os.Getenv(refusedEnv) != "proc" {
		t.Skip("run by TestHostProc")
	}
	// As runc makes /proc/sys read-only: a bind of it over itself.
	if err := unix.Mount("/proc/sys", "/proc/sys", "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", "/proc/sys", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	cfg := airlockConfig("write-file", "/proc/sys/kernel/hostname", "x")
	if initproc.PsxReadsProc {
		s, err := Start(context.Background(), cfg)
		if err == nil {
			s.Kill()
			t.Fatal("Start passed with the host's /proc and a cgo build")
		}
		if !strings.Contains(err.Error(), "built with cgo") {
			t.Fatalf("Start: %v, want the cgo refusal", err)
		}
		return
	}
	res, out, errOut := run(t, cfg)
	if r := lastReport(t, out+errOut); r.Succeeded || r.Errno != "EROFS" {
		t.Errorf("write to the host's /proc/sys: %+v", r)
	}
	for key, want := range map[string]string{
		"proc":              "the host's, bound with its masks",
		"nested_namespaces": "refused by the seccomp filter only",
	} {
		if !strings.Contains(res.Receipt[key], want) {
			t.Errorf("receipt %s = %q, want it to say %q", key, res.Receipt[key], want)
		}
	}
	_, out, errOut = run(t, airlockConfig("read-file", "/proc/1/environ"))
	if r := lastReport(t, out+errOut); r.Succeeded || r.Errno != "EACCES" {
		t.Errorf("read the host's pid 1 environment: %+v", r)
	}
	cfg.Require = []string{requireProcFS}
	if s, err := Start(context.Background(), cfg); err == nil {
		s.Kill()
		t.Error("require procfs: Start passed with the host's /proc")
	} else if !strings.Contains(err.Error(), `requires one ("procfs")`) {
		t.Errorf("require procfs: %v", err)
	}
}

// TestOnlyRefusalsWeaken: a passing shortage at the init's start (a
// process limit, memory) must never start it without a network namespace.
func TestOnlyRefusalsWeaken(t *testing.T) {
	for err, want := range map[error]bool{
		&os.SyscallError{Syscall: "fork/exec", Err: unix.EPERM}: true,
		unix.ENOSPC: true, unix.EINVAL: true, unix.EACCES: true,
		unix.EAGAIN: false, unix.ENOMEM: false, errors.New("other"): false,
	} {
		if got := refusal(err); got != want {
			t.Errorf("refusal(%v) = %t, want %t", err, got, want)
		}
	}
}
