package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/proxy"
)

// airlockCmd runs the command line in process and returns its exit
// status and output.
func airlockCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	privateKey(t)
	root := newRootCmd()
	root.SetArgs(args)
	// As safe for concurrent writes as os.Stdout and os.Stderr, which
	// they stand for: a session step's output and airlock's notices are
	// copied into stderr by two goroutines.
	var out, errb testutil.SyncBuffer
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
		code = exitOK
	case errors.As(err, &ee):
		code = ee.Code
	default:
		code = exitFailed
	}
	return code, out.String(), errb.String()
}

// startProxy starts "airlock proxy" in process and returns its address and
// a function that stops it and returns its stderr.
func startProxy(t *testing.T, pol, task, logFile string) (addr string, stop func() string) {
	t.Helper()
	proxyDialer = proxy.DialerFunc(testutil.LoopbackDialer(t))
	root := newRootCmd()
	root.SetArgs([]string{"--policy", pol, "proxy", "--task", task, "--listen", "127.0.0.1:0", "--audit", logFile})
	stderr := &testutil.SyncBuffer{}
	root.SetErr(stderr)
	root.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	addr = waitListening(t, stderr, done)
	return addr, func() string {
		cancel()
		<-done
		proxyDialer = nil
		return stderr.String()
	}
}

// socksConnect asks a SOCKS5 proxy for host:port with the host's bytes as
// they are, and returns the reply code.
func socksConnect(t *testing.T, addr, host string, port uint16) byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}, host...)
	req = append(req, byte(port>>8), byte(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 12)
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatalf("socks5 reply: %v", err)
	}
	return reply[3]
}

// connectStatus sends CONNECT target and returns the status line.
func connectStatus(t *testing.T, addr, target string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	b := make([]byte, 256)
	n, _ := c.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\r\n")
	return line
}

// TestNotUTF8Paths sends bytes that are not UTF-8 down each path the
// review tried: a command line's tool, command and arguments (denied
// outright, and run inside a sandbox), a host name through the proxy by
// CONNECT and by SOCKS5, and explain. Every decision is recorded with the
// exact bytes, the log verifies, and it still serves: the next run is
// decided (not 125) and a restarted proxy starts. Before, those lines made
// the log unverifiable and, once last, switched the audit off.
func TestNotUTF8Paths(t *testing.T) {
	t.Setenv("AIRLOCK_POLICY", "")
	dir := t.TempDir()
	logFile := filepath.Join(dir, "audit.jsonl")
	pol := filepath.Join(dir, "policy.json")
	writeTestFile(t, pol, `{"toolScopes": {"t": {"allow": [{"name": "echo", "command": "/bin/echo", "argPatterns": [], "allowExtraArgs": true}]}},
 "egress": {"taskAllowlist": {"ci": ["allowed.test"]}}}`)

	// The command line: a denied tool, command and argument.
	if code, _, stderr := airlockCmd(t, "--policy", pol, "run", "--tool", "t\xff", "--audit", logFile, "--", "x\xfe", "\xff"); code != exitDenied {
		t.Fatalf("run of a denied command: exit %d\n%s", code, stderr)
	}
	want := map[string]bool{"tool t\xff": false, "command x\xfe": false, "arg \xff": false,
		"socks5 \xff\xfeevil.test": false, "connect \xfe\xff.test": false}

	// The proxy, by SOCKS5 and CONNECT.
	addr, stop := startProxy(t, pol, "ci", logFile)
	if code := socksConnect(t, addr, "\xff\xfeevil.test", 443); code != 2 {
		t.Errorf("socks5: reply %d, want 2 (not allowed)", code)
	}
	if line := connectStatus(t, addr, "\xfe\xff.test:443"); !strings.HasPrefix(line, "HTTP/1.1 403") {
		t.Errorf("CONNECT: %q, want 403", line)
	}
	stop()

	// explain decides and records nothing; its JSON escapes the bytes.
	before, _ := os.ReadFile(logFile)
	code, out, _ := airlockCmd(t, "--policy", pol, "explain", "--task", "ci", "--host", "\xff.test", "--json")
	var ex struct{ Decision, Reason string }
	if code != exitOK || json.Unmarshal([]byte(out), &ex) != nil || ex.Decision != "deny" || !strings.Contains(ex.Reason, `"\xff.test"`) {
		t.Errorf("explain --host: exit %d, %s", code, out)
	}
	if code, out, _ := airlockCmd(t, "--policy", pol, "explain", "--tool", "t", "--json", "--", "/bin/echo", "\xff"); code != exitOK || !strings.Contains(out, `"decision":"allow"`) {
		t.Errorf("explain --tool: exit %d, %s", code, out)
	}
	if after, _ := os.ReadFile(logFile); !bytes.Equal(after, before) {
		t.Error("explain wrote to the audit log")
	}

	// Run inside a sandbox: every record of the run (decision, launch,
	// outcome, teardown) carries the argument's bytes. (What the command
	// itself receives is the sandbox's to carry.)
	if os.Geteuid() == 0 {
		want["arg a\xfe\xffb"] = false
		code, out, stderr := airlockCmd(t, "--policy", pol, "run", "--tool", "t", "--audit", logFile, "--", "/bin/echo", "\xff", "a\xfe\xffb")
		if code != exitOK || !strings.HasSuffix(out, "b\n") {
			t.Errorf("run /bin/echo: exit %d, stdout %q\n%s", code, out, stderr)
		}
	}

	// The log verifies and holds the bytes; what comes after still works.
	if code, out, stderr := airlockCmd(t, "audit", "verify", logFile); code != exitOK {
		t.Fatalf("audit verify: %d %s%s", code, out, stderr)
	}
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runRecords := 0
	for ev, err := range audit.Events(f) {
		if err != nil {
			t.Fatal(err)
		}
		c := ev.Context
		want["tool "+c.Tool] = true
		want["command "+c.Command] = true
		for _, a := range c.Args {
			want["arg "+a] = true
			if a == "a\xfe\xffb" {
				runRecords++
			}
		}
		want[c.Protocol+" "+c.Host] = true
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no event carries %q", k)
		}
	}
	if os.Geteuid() == 0 && runRecords != 4 {
		t.Errorf("%d records of the run carry its argument, want 4 (decision, launch, outcome, teardown)", runRecords)
	}
	if code, _, stderr := airlockCmd(t, "--policy", pol, "run", "--tool", "t\xff", "--audit", logFile, "--", "ls"); code != exitDenied {
		t.Errorf("the next run: exit %d, want %d\n%s", code, exitDenied, stderr)
	}
	_, stop = startProxy(t, pol, "ci", logFile)
	stop()
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
