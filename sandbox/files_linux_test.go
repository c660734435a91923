package sandbox

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

func TestWorkspaceInFindingsOut(t *testing.T) {
	testutil.RequireRoot(t)
	ws := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("host secret"), 0o600)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.WriteFile(filepath.Join(ws, "sub", "in.txt"), []byte("input"), 0o644)
	os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o4755)
	os.Symlink(secret, filepath.Join(ws, "escape")) // copied as a link, resolved inside
	finds := filepath.Join(t.TempDir(), "findings")

	script := `set -e
cat /workspace/sub/in.txt
/workspace/run.sh
test -u /workspace/run.sh && echo SETUID
cat /workspace/escape 2>/dev/null && echo FOLLOWED || echo link-dead
echo result > /findings/report.txt
mkdir /findings/d && echo nested > /findings/d/n.txt
ln -s /etc/passwd /findings/link
mkfifo /findings/fifo
echo changed > /workspace/sub/in.txt`
	cfg := shellConfig(script)
	cfg.Workspace, cfg.Findings = ws, finds
	res, out, err := runWait(t, cfg)
	if res.ExitCode != 0 || !errors.Is(err, findings.ErrLost) {
		t.Fatalf("result %+v, %v, output %q; want exit 0 and the findings not all kept", res, err, out)
	}
	for _, w := range []string{"input", "ran", "link-dead"} {
		if !strings.Contains(out, w) {
			t.Errorf("output %q lacks %q", out, w)
		}
	}
	if strings.Contains(out, "SETUID") || strings.Contains(out, "FOLLOWED") {
		t.Errorf("output %q: setuid bit or host link crossed into the sandbox", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "sub", "in.txt")); string(b) != "input" {
		t.Errorf("host workspace changed to %q: it must be a copy", b)
	}
	if b, _ := os.ReadFile(filepath.Join(finds, "report.txt")); string(b) != "result\n" {
		t.Errorf("findings report %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(finds, "d", "n.txt")); string(b) != "nested\n" {
		t.Errorf("nested finding %q", b)
	}
	for _, n := range []string{"link", "fifo"} {
		if _, err := os.Lstat(filepath.Join(finds, n)); err == nil {
			t.Errorf("findings %s was copied out", n)
		}
	}
	if len(res.FindingsSkipped) != 2 {
		t.Errorf("skipped %q, want the link and the fifo", res.FindingsSkipped)
	}
}

func TestProxyListener(t *testing.T) {
	testutil.RequireRoot(t)
	// The target prints its proxy variables, then talks to the proxy
	// listener the parent serves.
	cfg := payloadConfig("dial")
	cfg.Env = append(cfg.Env, "HTTP_PROXY=http://host-proxy:3128", "no_proxy=127.0.0.1")
	cfg.Proxy = true
	var out strings.Builder
	cfg.Stdout, cfg.Stderr = &out, &out
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis := s.Listener()
	if lis == nil || s.port == 0 {
		s.Kill()
		t.Fatal("no proxy listener")
	}
	served := make(chan string, 1)
	go func() {
		c, err := lis.Accept()
		if err != nil {
			served <- err.Error()
			return
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("pong\n"))
		c.Close()
		served <- line
	}()
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatal(err)
	}
	res, err := s.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v, output %q", res, err, out.String())
	}
	if got := <-served; got != "ping\n" {
		t.Fatalf("proxy side read %q", got)
	}
	port := strconv.Itoa(s.port)
	for _, w := range []string{"HTTP_PROXY=http://127.0.0.1:" + port, "ALL_PROXY=socks5h://127.0.0.1:" + port, "NO_PROXY=\n", "no_proxy=\n", "pong"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output %q lacks %q", out.String(), w)
		}
	}
	if strings.Contains(out.String(), "host-proxy") || strings.Contains(out.String(), "127.0.0.1\n") {
		t.Errorf("the caller's proxy variable reached the target: %q", out.String())
	}
}

// payloadDial prints the proxy variables, sends "ping" to the proxy and
// prints the answer; a dial to any other loopback port must fail.
func payloadDial([]string) int {
	for _, kv := range os.Environ() {
		if strings.Contains(strings.ToUpper(kv), "_PROXY=") {
			println(kv)
		}
	}
	port := strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://127.0.0.1:")
	if c, err := net.Dial("tcp", "127.0.0.1:1"); err == nil {
		c.Close()
		println("dialed a non-proxy port")
		return 1
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		println("dial proxy:", err.Error())
		return 1
	}
	defer c.Close()
	c.Write([]byte("ping\n"))
	line, _ := bufio.NewReader(c).ReadString('\n')
	println(strings.TrimSpace(line))
	return 0
}
