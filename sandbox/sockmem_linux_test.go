package sandbox

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
	cfg := payloadConfig("airlock", "udp-pin", "100000", "5")
	cfg.Caps.MemoryBytes = 64 << 20
	var out testutil.SyncBuffer
	cfg.Stdout, cfg.Stderr = &out, &out
	before := udpPages(t)
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), `"udp-pin"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the payload did not report: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	held := (udpPages(t) - before) * int64(os.Getpagesize())
	reps := payload.Parse(bytes.Clone([]byte(out.String())))
	t.Logf("%v; the host's UDP memory grew by %d bytes; receipt %q", reps, held, s.fullReceipt()["memory"])
	if held > cfg.Caps.MemoryBytes {
		t.Errorf("the sandbox's unread datagrams hold %d bytes of kernel memory, more than its memory cap of %d", held, cfg.Caps.MemoryBytes)
	}
}
