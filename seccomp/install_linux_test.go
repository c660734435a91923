package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/seccomp/internal/foreignabi"
)

// filtered is what each probe gets under the filter, as root or not: the
// filter answers before the kernel checks any privilege.
var filtered = map[string]string{
	"shmget-private":          "ok",
	"msgget-private":          "ok",
	"semget-private":          "ok",
	"ptrace-traceme":          "EPERM",
	"ptrace-attach-pid0":      "EPERM",
	"process_vm_readv-self":   "EPERM",
	"pidfd_getfd-bad-fd":      "EPERM",
	"unshare-newns":           "EPERM",
	"unshare-newuser":         "EPERM",
	"setns-own-net":           "EPERM",
	"mount-unknown-fs":        "EPERM",
	"umount2-not-a-mount":     "EPERM",
	"chroot-slash":            "EPERM",
	"socket-netlink":          "EAFNOSUPPORT",
	"socket-packet":           "EAFNOSUPPORT",
	"socket-vsock":            "EAFNOSUPPORT",
	"socket-inet-raw":         "EPERM",
	"socket-inet-stream":      "ok",
	"socket-inet-mptcp":       "EPROTONOSUPPORT",
	"socket-inet6-ping":       "EPROTONOSUPPORT",
	"socket-unix-dgram":       "EACCES",
	"socket-inet-udp":         "ok",
	"socket-inet6-udp":        "ok",
	"listen-loopback":         "ok",
	"socketpair-unix":         "ok",
	"keyctl-session-id":       "EPERM",
	"bpf-map-create-empty":    "EPERM",
	"perf_event_open-null":    "EPERM",
	"userfaultfd":             "EPERM",
	"io_uring_setup-null":     "ENOSYS",
	"clone3-null":             "ENOSYS",
	"exec-clone-newuser":      "EPERM",
	"ioctl-tiocsti-devnull":   "EPERM",
	"ioctl-tiocsti-high-bits": "EPERM",
	"ioctl-tioclinux-devnull": "EPERM",
	"ioctl-tcgets-devnull":    "ENOTTY",
	"personality-no-aslr":     "EPERM",
	"personality-query":       "ok",
	"syslog-size":             "EPERM",
	"open_by_handle_at-null":  "EPERM",
}

// runProbeChild runs the probes in a child and returns their results.
func runProbeChild(t *testing.T, cmd *exec.Cmd) map[string]string {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe child: %v\n%s", err, stderr.Bytes())
	}
	got := map[string]string{}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("probe child output %q: %v", out, err)
	}
	return got
}

func compareProbes(t *testing.T, got, want map[string]string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if got[n] != want[n] {
			t.Errorf("%s: got %s, want %s", n, got[n], want[n])
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: unexpected probe (result %s)", n, got[n])
		}
	}
}

func TestInstallRefusesAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	got := runProbeChild(t, testutil.SelfCommand(t, childEnv+"=probe-filtered"))
	compareProbes(t, got, filtered)
}

// TestProbesWithoutFilter runs the same probes, as root, without the
// filter: each refused one must then get a different answer from the
// kernel, which shows the refusals above are the filter's and not the
// kernel's own privilege checks.
func TestProbesWithoutFilter(t *testing.T) {
	testutil.RequireRoot(t)
	got := runProbeChild(t, testutil.SelfCommand(t, childEnv+"=probe-control"))
	for name, want := range filtered {
		if name == "ptrace-traceme" {
			continue // not run without the filter
		}
		c, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: missing from the control run", name)
		case want == "ok" || name == "ioctl-tcgets-devnull":
			if c != want {
				t.Errorf("%s: without the filter got %s, want %s", name, c, want)
			}
		case c == want:
			t.Errorf("%s: got %s without the filter too; the probe does not show the filter's refusal", name, c)
		}
	}
}

// TestNoNetNSFilterRefuses installs both filters, as an init without a
// network namespace of its own does: UDP sockets and listen(2) are
// refused with EACCES on top of everything the first filter refuses (a
// datagram socket the first refuses already gets the second's EACCES:
// the newer filter's errno wins), and TCP sockets still open.
func TestNoNetNSFilterRefuses(t *testing.T) {
	want := maps.Clone(filtered)
	for _, p := range []string{"socket-inet-udp", "socket-inet6-udp", "listen-loopback", "socket-inet6-ping"} {
		want[p] = "EACCES"
	}
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, childEnv+"=probe-nonetns"))
	compareProbes(t, runProbeChild(t, cmd), want)
}

// TestNoMemoryCgroupFilterRefuses installs the first and the third
// filter, as an init without a memory cgroup does: shmget, msgget and
// semget fail with ENOSYS, UDP sockets with EACCES (a datagram socket the
// first refuses gets the newer filter's errno), everything else as under
// the first alone.
func TestNoMemoryCgroupFilterRefuses(t *testing.T) {
	want := maps.Clone(filtered)
	for _, p := range []string{"shmget-private", "msgget-private", "semget-private"} {
		want[p] = "ENOSYS"
	}
	for _, p := range []string{"socket-inet-udp", "socket-inet6-udp", "socket-inet6-ping"} {
		want[p] = "EACCES"
	}
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, childEnv+"=probe-nomemcg"))
	compareProbes(t, runProbeChild(t, cmd), want)
}

func TestInstallRefusesUnprivileged(t *testing.T) {
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, childEnv+"=probe-filtered"))
	got := runProbeChild(t, cmd)
	compareProbes(t, got, filtered)
}

func TestWorkloadRunsUnderFilter(t *testing.T) {
	for _, nobody := range []bool{false, true} {
		t.Run(map[bool]string{false: "as-self", true: "as-nobody"}[nobody], func(t *testing.T) {
			cmd := testutil.SelfCommand(t, childEnv+"=workload")
			if nobody {
				cmd = testutil.AsNobody(t, cmd)
			}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "pid ") {
				t.Fatalf("workload under the filter: %v\n%s", err, out)
			}
		})
	}
}

// killedBySIGSYS runs a child scenario that must be killed by the filter.
func killedBySIGSYS(t *testing.T, scenario string) {
	t.Helper()
	cmd := testutil.SelfCommand(t, childEnv+"="+scenario)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("%s: child was not killed (err %v)\n%s", scenario, err, out)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Fatalf("%s: child ended with %v, want killed by SIGSYS\n%s", scenario, ee, out)
	}
	if ws.CoreDump() {
		t.Errorf("%s: child dumped core", scenario)
	}
	if entries, _ := os.ReadDir(cmd.Dir); len(entries) != 0 {
		t.Errorf("%s: child left %d files in its directory", scenario, len(entries))
	}
}

func TestX32IsKilled(t *testing.T) {
	requireAMD64(t)
	killedBySIGSYS(t, "x32")
}

// TestInt80IsKilled makes a real i386 system call through int 0x80: the
// kernel runs it (the control shows it returns our pid), and under the
// filter it kills the process instead of passing as the native call with
// the same number.
func TestInt80IsKilled(t *testing.T) {
	if !foreignabi.Supported {
		t.Skip("no foreign ABI entry point on this architecture")
	}
	cmd := testutil.SelfCommand(t, childEnv+"=int80-control")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	r, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if r != cmd.Process.Pid {
		t.Skipf("the kernel does not run i386 calls (int 0x80 returned %d; IA32 emulation off)", r)
	}
	killedBySIGSYS(t, "int80")
}
