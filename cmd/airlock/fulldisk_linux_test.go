package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// fillAuditDisk fills the disk of the audit log at path, to its last byte
// (filler records take what a zero file cannot), and returns a function
// that frees it.
func fillAuditDisk(t *testing.T, path string) (free func()) {
	t.Helper()
	return testutil.FillDisk(t, filepath.Dir(path), func() error {
		l, err := audit.Open(path)
		if err != nil {
			return err
		}
		defer l.Close()
		_, err = l.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "filler"})
		return err
	})
}

// TestProxyOnFullDisk runs "airlock proxy" with its audit log on a full
// disk: an allowed connection whose decision cannot be recorded is refused
// (503, saying so) and never dialled; a denied one is refused as always;
// each failed record is an error line on stderr. Once there is room
// again, connections go through.
func TestProxyOnFullDisk(t *testing.T) {
	upstream := httpUpstream(t)
	_, upPort, _ := net.SplitHostPort(upstream)
	var dialled atomic.Int32
	counted, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer counted.Close()
	go func() {
		for {
			c, err := counted.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	_, countedPort, _ := net.SplitHostPort(counted.Addr().String())
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	writeTestFile(t, pol, fmt.Sprintf(`{"toolScopes": {}, "egress": {"taskAllowlist": {"ci": ["127.0.0.1:%s", "127.0.0.1:%s"]}}}`, upPort, countedPort))
	logFile := filepath.Join(testutil.SmallTmpfs(t, 64<<10), "audit.jsonl")
	addr, stop := startProxy(t, pol, "ci", logFile)
	free := fillAuditDisk(t, logFile)

	if line := connectStatus(t, addr, "127.0.0.1:"+countedPort); !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Errorf("CONNECT allowed but not recordable: %q, want 503", line)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n", countedPort)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	c.Close()
	if why := resp.Header.Get("X-Airlock-Reason"); resp.StatusCode != 503 || !strings.HasSuffix(why, "recording the decision: the audit log could not record it") ||
		strings.Contains(why+string(body), logFile) {
		t.Errorf("the refusal does not say why, or names the log: %d %q %q", resp.StatusCode, why, body)
	}
	if line := connectStatus(t, addr, "169.254.169.254:80"); !strings.HasPrefix(line, "HTTP/1.1 403") {
		t.Errorf("CONNECT to the metadata address: %q, want 403", line)
	}
	if code := socksConnect(t, addr, "127.0.0.1", 1); code != 2 {
		t.Errorf("socks5 denied: reply %d, want 2", code)
	}
	if code := socksConnect(t, addr, "127.0.0.1", uint16(counted.Addr().(*net.TCPAddr).Port)); code != 1 {
		t.Errorf("socks5 allowed but not recordable: reply %d, want 1 (general failure)", code)
	}
	free()
	if line := connectStatus(t, addr, "127.0.0.1:"+upPort); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Errorf("CONNECT with room again: %q, want 200", line)
	}
	stderr := stop()
	if n := dialled.Load(); n != 0 {
		t.Errorf("an unrecorded decision was acted on: the upstream was dialled %d times", n)
	}
	for _, want := range []string{
		"airlock: audit: error: the egress allow record was not written: audit: write " + logFile + ": no space left on device\n",
		"airlock: audit: error: the egress deny record was not written: audit: write " + logFile + ": no space left on device\n",
	} {
		if strings.Count(stderr, want) < 2 {
			t.Errorf("stderr lacks two lines %q:\n%s", want, stderr)
		}
	}
	if code, out, errs := airlockCmd(t, "audit", "verify", logFile); code != exitOK {
		t.Errorf("audit verify: %d %s%s", code, out, errs)
	}
}

// TestRunOnFullDiskCommandLine runs "airlock run" with its audit log on a
// full disk: the decision cannot be made durable, so nothing runs; the
// exit status is 125, stderr says why, and the result carries auditError.
func TestRunOnFullDiskCommandLine(t *testing.T) {
	testutil.RequireRoot(t)
	t.Setenv("AIRLOCK_POLICY", "")
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	writeTestFile(t, pol, `{"toolScopes": {"t": {"allow": [{"name": "sh", "command": "/bin/sh", "argPatterns": [["-c"]], "allowExtraArgs": true}]}}}`)
	logFile := filepath.Join(testutil.SmallTmpfs(t, 64<<10), "audit.jsonl")
	result := filepath.Join(dir, "r.json")
	ran := filepath.Join(dir, "ran")
	defer fillAuditDisk(t, logFile)()
	code, _, stderr := airlockCmd(t, "--policy", pol, "run", "--tool", "t", "--audit", logFile, "--result", result,
		"--", "/bin/sh", "-c", "echo > "+ran)
	if code != exitSetup || !strings.Contains(stderr, "airlock: setup: error: audit: write ") {
		t.Errorf("exit %d, stderr %q; want %d and the setup line", code, stderr, exitSetup)
	}
	var res enforcer.Result
	b, _ := os.ReadFile(result)
	if err := json.Unmarshal(b, &res); err != nil || !strings.HasPrefix(res.AuditError, "the command allow record was not written") {
		t.Errorf("result: %s (%v)", b, err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
}

// TestAuditFailureLine checks the stderr line of a run whose record could
// not be written: one line, after the outcome's, with what the message
// holds escaped.
func TestAuditFailureLine(t *testing.T) {
	kill := "wall"
	var w bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetErr(&w)
	res := enforcer.Result{ExitCode: enforcer.ExitAudit, KilledBy: &kill, KillReason: "killed by the wall cap: x",
		AuditError: "the resource kill record was not written: audit: write /tmp/a\x1b]0;x\a\xff: no space left on device"}
	reportOutcome(cmd.ErrOrStderr(), res, fmt.Errorf("enforcer: %w", enforcer.ErrAudit))
	want := "airlock: resource: kill: killed by the wall cap: x\n" +
		`airlock: audit: error: the resource kill record was not written: audit: write /tmp/a\x1b]0;x\a\xff: no space left on device` + "\n"
	if w.String() != want {
		t.Errorf("stderr:\n%q\nwant\n%q", w.String(), want)
	}
}
