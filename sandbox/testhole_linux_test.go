package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/holes"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

func init() {
	payloads["foreign-seccomp"] = payloadForeignSeccomp
}

// TestHolesRefused opens each test hole in turn and checks that Start
// with the start-up probes fails with ErrProbe naming exactly the probes
// that watch that hole (every other probe passed), that the target never
// ran, and that nothing of the sandbox is left on the host. Rootless in
// TestRootlessInner.
func TestHolesRefused(t *testing.T) {
	testutil.RequireRoot(t)
	testHoles(t)
}

func testHoles(t *testing.T) {
	file, addr := canaries(t)
	for _, h := range holes.All {
		t.Run(h.Name, func(t *testing.T) {
			holes.Open(t, h.Name)
			var out bytes.Buffer
			cfg := shellConfig("echo ran")
			cfg.ID = "hole-" + h.Name + "-" + strconv.Itoa(os.Getpid())
			cfg.Stdout, cfg.Stderr = &out, &out
			cfg.Probes = &ProbeRequest{CanaryFile: file, CanaryAddr: addr}
			if h.Name == "netns" && initproc.LandlockABI() < 4 {
				// Nothing would refuse the connection: canaries() fails
				// the test on one.
				cfg.Probes.CanaryAddr = ""
			}
			s, err := Start(context.Background(), cfg)
			if err == nil {
				s.Kill()
				t.Fatal("Start passed its probes with the hole open")
			}
			if !errors.Is(err, ErrProbe) {
				t.Fatalf("Start: %v, want ErrProbe", err)
			}
			failed := failedProbes(t, err)
			for _, p := range h.Probes {
				if got, ok := failed[p]; !ok {
					t.Errorf("probe %s did not fail: %v", p, err)
				} else if got != holeDetails[p] {
					t.Errorf("probe %s: %q, want %q", p, got, holeDetails[p])
				}
			}
			for p, detail := range failed {
				if !slices.Contains(h.Probes, p) && !slices.Contains(h.Maybe, p) {
					t.Errorf("probe %s failed too (%s): the hole is not the only one", p, detail)
				}
			}
			if out.Len() != 0 {
				t.Errorf("the target ran: %q", out.String())
			}
			testutil.CheckNoSandboxLeft(t, cfg.ID)
		})
	}
}

// holeDetails are the fixed details of the probes the holes trip.
var holeDetails = map[string]string{
	"uid":          "uid or gid is not 65534",
	"caps":         "CapInh is not empty", // the init's ambient capabilities are inheritable too
	"no_new_privs": "NoNewPrivs is not 1",
	"seccomp":      "Seccomp is not 2",
	"landlock":     "a write outside the writable directories is allowed",
	"interfaces":   "an interface other than lo exists",
	"routes":       "a route through an interface other than lo exists",
	"host_dirs":    "/root is reachable",
}

// failedProbes reads the failed probes' names and details from Start's
// ErrProbe error ("...: start-up probe failed: NAME: DETAIL; NAME: ...").
func failedProbes(t *testing.T, err error) map[string]string {
	t.Helper()
	_, list, ok := strings.Cut(err.Error(), ErrProbe.Error()+": ")
	if !ok {
		t.Fatalf("error %q does not list the failed probes", err)
	}
	out := map[string]string{}
	for _, part := range strings.Split(list, "; ") {
		name, detail, _ := strings.Cut(part, ": ")
		out[name] = detail
	}
	return out
}

// TestHoleUnknown refuses an unknown hole before anything starts.
func TestHoleUnknown(t *testing.T) {
	holes.Open(t, "seccomp-typo")
	_, err := Start(context.Background(), shellConfig("true"))
	if err == nil || !strings.Contains(err.Error(), `test hole "seccomp-typo" (AIRLOCK_TEST_HOLE): unknown`) {
		t.Fatalf("Start with an unknown hole: %v", err)
	}
}

// TestProbeSeccompForeignFilter runs the seccomp probe under filters that
// are not airlock's (in a child: a filter cannot be removed): one that
// allows everything, and one that refuses unshare with EPERM, as a
// container runtime's does. Seccomp is 2 under both; the probe must
// still fail, saying why.
func TestProbeSeccompForeignFilter(t *testing.T) {
	for _, c := range []struct{ filter, want string }{
		{"allow-all", "Seccomp is 2 but unshare(0) is not refused with EPERM: not airlock's filter"},
		{"refuse-unshare", "Seccomp is 2 but a netlink socket is not refused with EAFNOSUPPORT: not airlock's filter"},
	} {
		cmd := testutil.SelfCommand(t, payloadEnv+"=foreign-seccomp")
		cmd.Args = append(cmd.Args, c.filter)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		var r ProbeResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: output %q: %v", c.filter, out, err)
		}
		if r.Name != "seccomp" || r.OK || r.Detail != c.want {
			t.Errorf("%s: %+v, want a failure %q", c.filter, r, c.want)
		}
	}
}

// payloadForeignSeccomp installs a filter that is not airlock's (its last
// argument names which) and prints the seccomp probe's result.
func payloadForeignSeccomp(args []string) int {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // the syscall number
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_UNSHARE, SkipFalse: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	}
	if len(args) > 0 && args[len(args)-1] == "allow-all" {
		prog = prog[3:]
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		fmt.Fprintln(os.Stderr, e)
		return 2
	}
	for _, r := range Probe(ProbeRequest{}) {
		if r.Name == "seccomp" {
			json.NewEncoder(os.Stdout).Encode(r)
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "no seccomp probe")
	return 2
}
