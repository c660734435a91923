package enforcer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestProxyBoundedFromInside is the proxy part of finding 7 of issue 11:
// code in a sandbox with a generous openFiles cap opens 1,500 tunnels and
// leaves each (an upstream that never closes keeps the proxy's side open),
// then holds 1,500 half-open handshakes; airlock's own process (this one)
// must stay within a bound on its file descriptors and memory, and refuse
// what is past the bound at once.
func TestProxyBoundedFromInside(t *testing.T) {
	testutil.RequireRoot(t)
	const n = 1500
	// The upstream holds every connection and never answers or closes;
	// it keeps them without a goroutine each, and counts them, so that
	// airlock's own descriptors can be told from the upstream's.
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sunk []net.Conn
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			sunk = append(sunk, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		sink.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range sunk {
			c.Close()
		}
	})
	sunkNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(sunk)
	}
	target := sink.Addr().String()
	pol, err := policy.Parse("bound.json", fmt.Appendf(nil, `{
  "toolScopes": {"flood": {"allow": [{"name": "payload", "command": "/.airlock/self", "argPatterns": [["payload"]], "allowExtraArgs": true}],
    "caps": {"openFiles": 4096, "wallSeconds": 60, "cpuSeconds": 30}}},
  "egress": {"taskAllowlist": {"flood": [%q]}}
}`, target))
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var self sandbox.Config
	self.BindSelf()
	enf, err := enforcer.New(pol, log, enforcer.Options{Binds: self.Binds, Dialer: proxy.DialerFunc(testutil.LoopbackDialer(t))})
	if err != nil {
		t.Fatal(err)
	}

	fds0, rss0 := fdCount(t), rssBytes(t)
	var maxFDs, maxRSS atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			maxFDs.Store(max(maxFDs.Load(), int64(fdCount(t)-sunkNow())))
			maxRSS.Store(max(maxRSS.Load(), rssBytes(t)))
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var out bytes.Buffer
	res, err := enf.Run(context.Background(), enforcer.Request{Tool: "flood", Command: sandbox.SelfPath,
		Args: []string{"payload", "proxy-flood", target, strconv.Itoa(n)}, Stdout: &out, Stderr: os.Stderr})
	close(stop)
	<-sampled
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: exit %d, %v\n%s", res.ExitCode, err, out.String())
	}
	var rep payload.Report
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &rep); err != nil {
		t.Fatalf("payload report %q: %v", out.String(), err)
	}
	t.Logf("payload: %s", rep.Evidence)
	t.Logf("airlock's own process: %d fds before, at most %d during the run (upstream's excluded); RSS %d MiB before, at most %d MiB",
		fds0, maxFDs.Load(), rss0>>20, maxRSS.Load()>>20)
	if rep.Succeeded || rep.Detail["refused"] == "0" || rep.Detail["cut"] == "0" {
		t.Errorf("the proxy took everything the sandbox asked for: %s", rep.Evidence)
	}
	if tunnels, _ := strconv.Atoi(rep.Detail["tunnels"]); tunnels > proxy.SandboxMaxConns {
		t.Errorf("%d tunnels opened, more than the bound of %d", tunnels, proxy.SandboxMaxConns)
	}
	// Each connection the sandbox holds costs at most six descriptors
	// here (its socket, the upstream's, and a splice pipe for each
	// direction), plus the sandbox's own pipes and files.
	bound := int64(6*proxy.SandboxMaxConns + 64)
	if grew := maxFDs.Load() - int64(fds0); grew > bound {
		t.Errorf("airlock's fds grew by %d during the flood, want at most %d", grew, bound)
	}
	rssBound := int64(64 << 20)
	if raceBuild {
		rssBound *= 4
	}
	if grew := maxRSS.Load() - rss0; grew > rssBound {
		t.Errorf("airlock's RSS grew by %d MiB during the flood, want at most %d MiB", grew>>20, rssBound>>20)
	}
	// Nothing of the run's proxy outlives it.
	deadline := time.Now().Add(10 * time.Second)
	for fdCount(t)-sunkNow() > fds0+16 {
		if time.Now().After(deadline) {
			t.Fatalf("%d fds after the run, %d before", fdCount(t)-sunkNow(), fds0)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The refusals reached the audit stream, counted rather than line by line.
	var refusals, counted int
	var first, last time.Time
	f, err := os.Open(log.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	b, _ := os.ReadFile(log.Path())
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, "connection refused as soon as it was accepted") {
			refusals++
			var ev audit.Event
			if err := json.Unmarshal([]byte(line), &ev); err == nil {
				c, _ := strconv.Atoi(ev.Context.Details["count"])
				counted += max(c, 1)
				if first.IsZero() {
					first = ev.TS
				}
				last = ev.TS
			}
		}
	}
	// Coalescing is a rate: per second of the flood at most 50 refusals
	// in full (audit's maxFullPerSecond) and a count or two. A loaded
	// machine's slower flood lasts more seconds and writes more records.
	maxRecords := 52 * (int(last.Sub(first)/time.Second) + 2)
	if refusals == 0 || refusals > maxRecords || counted < refusals {
		t.Errorf("%d refusal records over %v counting %d refusals: want them recorded, and coalesced (at most %d records)",
			refusals, last.Sub(first), counted, maxRecords)
	}
}

func fdCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
