package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/proxy"
)

// TestProxyStderrNeverBlocks is finding 14 of issue 11: "airlock proxy"
// whose stderr is a pipe nobody reads keeps answering client after
// client; the lines it could not write are counted, and said so once the
// pipe is read again. What it writes there is escaped, whatever the
// clients sent.
func TestProxyStderrNeverBlocks(t *testing.T) {
	upstream := httpUpstream(t)
	_, upPort, _ := net.SplitHostPort(upstream)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	body := fmt.Sprintf(`{"toolScopes": {}, "egress": {"taskAllowlist": {"ci": ["127.0.0.1:%s"]}}}`, upPort)
	if err := os.WriteFile(pol, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A small pipe, so that it is full after a few lines.
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	proxyDialer = proxy.DialerFunc(testutil.LoopbackDialer(t))
	defer func() { proxyDialer = nil }()
	root := newRootCmd()
	root.SetArgs([]string{"--policy", pol, "proxy", "--task", "ci", "--listen", addr, "--audit", filepath.Join(dir, "audit.jsonl")})
	root.SetErr(w)
	root.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitDialable(t, addr, done)

	const clients = 3000
	for i := range clients {
		target := "evil.example:443"
		switch i % 3 {
		case 1:
			target = "127.0.0.1:" + upPort
		case 2:
			target = "x\x1b]0;pwned\x07.example:443" // a title-setting sequence in the host
		}
		status, err := connectStatusCode(addr, target)
		if err != nil {
			t.Fatalf("client %d of %d (stderr unread): %v", i+1, clients, err)
		}
		// A refusal (403), a tunnel (200), a malformed request (400).
		if want := []int{http.StatusForbidden, http.StatusOK, http.StatusBadRequest}[i%3]; status != want {
			t.Fatalf("client %d: status %d, want %d", i+1, status, want)
		}
	}
	// Read the pipe again: what was queued comes out, then the count.
	var out bytes.Buffer
	read := make(chan struct{})
	go func() { defer close(read); _, _ = io.Copy(&out, r) }()
	time.Sleep(500 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("proxy returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("proxy did not stop")
	}
	w.Close()
	<-read
	s := out.String()
	if !strings.Contains(s, " log lines dropped: stderr was not read fast enough (the audit log holds every decision)") {
		t.Errorf("no count of dropped lines on stderr:\n%s", s[max(0, len(s)-2000):])
	}
	if strings.ContainsAny(s, "\x1b\x07") {
		t.Errorf("raw control bytes on stderr:\n%q", s[max(0, len(s)-2000):])
	}
}

// connectStatus sends one CONNECT and returns the status, within 10s.
func connectStatusCode(addr, target string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// freeLoopbackAddr returns a loopback address with a port free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitDialable waits until the proxy accepts connections at addr.
func waitDialable(t *testing.T, addr string, done chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		select {
		case err := <-done:
			t.Fatalf("proxy exited: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("proxy never listened")
}
