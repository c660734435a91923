package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
)

// udpPages reads the host's UDP socket memory, in pages, from
// /proc/net/sockstat ("UDP: inuse N mem M").
func udpPages(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == "UDP:" && f[3] == "mem" {
			n, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no UDP line in %s", b)
	return 0
}

// TestSocketBuffersBounded: datagrams queued on the sandbox's own UDP
// sockets and never read are kernel memory that cgroup v1 does not
// charge to the memory cap; a payload that fills 250 of them held about
// a gigabyte of it under a 64 MiB cap. With the group's socket buffers
// bounded they stay within the cap. (cgroup v2 charges them to
// memory.max; rootless without a memory cgroup, nothing bounds them.)
func TestSocketBuffersBounded(t *testing.T) {
	testutil.RequireRoot(t)
	checkSocketBuffers(t, 64<<20, 64<<20)
}

// checkSocketBuffers runs udp-pin under a memory cap and checks that the
// host's UDP memory grew by no more than bound while it held.
func checkSocketBuffers(t *testing.T, memory, bound int64) {
	cfg := payloadConfig("airlock", "udp-pin", "100000", "5")
	cfg.Caps.MemoryBytes = memory
	before := udpPages(t)
	s, out := holdingPayload(t, cfg, "udp-pin")
	defer s.Kill()
	held := (udpPages(t) - before) * int64(os.Getpagesize())
	reps := payload.Parse(bytes.Clone([]byte(out.String())))
	r := s.fullReceipt()
	t.Logf("%v; the host's UDP memory grew by %d bytes; receipt %q, %q", reps, held, r["memory"], r["seccomp"])
	if held > bound {
		t.Errorf("the sandbox's unread datagrams hold %d bytes of kernel memory, more than %d", held, bound)
	}
}

// TestSocketBuffersRootless: rootless without a memory cgroup nothing
// counts the datagrams a sandbox queues on its own UDP sockets and never
// reads (the host's net.core.rmem_max, read-only in the sandbox's network
// namespace, lets each socket hold 8 MiB), so UDP sockets are refused
// there; with a memory cgroup they stay within the cap. Before, one
// sandbox held about 2 GB of the host's UDP memory.
func TestSocketBuffersRootless(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RunTestAsNobody(t, "TestSocketBuffersRootlessInner", rootlessEnv+"=1")
}

func TestSocketBuffersRootlessInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	if os.Getenv(rootlessEnv) == "" {
		t.Skip("run by TestSocketBuffersRootless")
	}
	// RLIMIT_DATA without a cgroup: the race detector's shadow needs room.
	checkSocketBuffers(t, 1<<44, 64<<20)
}
