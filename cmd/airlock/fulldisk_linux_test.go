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
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	reportOutcome(cmd.ErrOrStderr(), res, fmt.Errorf("enforcer: %w", enforcer.ErrAudit), false)
	want := "airlock: resource: kill: killed by the wall cap: x\n" +
		`airlock: audit: error: the resource kill record was not written: audit: write /tmp/a\x1b]0;x\a\xff: no space left on device` + "\n"
	if w.String() != want {
		t.Errorf("stderr:\n%q\nwant\n%q", w.String(), want)
	}
}

// gatedCommand is a shell command that says it started (a file in sig)
// and waits to be let go (another), through a directory the policy binds
// writable: the test fills the disk while it runs.
func gatedCommand(sig string) string {
	return fmt.Sprintf("touch %[1]s/started; while [ ! -e %[1]s/go ]; do sleep 0.02; done", sig)
}

// fillWhileRunning waits for the gated command in sig to start, fills the
// audit log's disk and lets the command go; it returns what frees it.
func fillWhileRunning(t *testing.T, sig, logFile string) (free func()) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(sig, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	free = fillAuditDisk(t, logFile)
	if err := os.WriteFile(filepath.Join(sig, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return free
}

// fullDiskSetup is a policy whose shell may write to a signal directory
// (outside /tmp, where a policy may not bind), an audit log on a 64 KiB
// tmpfs, and a state and runtime directory of the test's own.
func fullDiskSetup(t *testing.T) (pol, logFile, sig string) {
	t.Helper()
	testutil.RequireRoot(t)
	t.Setenv("AIRLOCK_POLICY", "")
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", run)
	t.Cleanup(func() { stopHolders(filepath.Join(run, "airlock")) })
	sig, err := os.MkdirTemp("/var/tmp", "airlock-test-sig-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sig) })
	if err := os.Chmod(sig, 0o777); err != nil {
		t.Fatal(err)
	}
	pol = filepath.Join(dir, "policy.json")
	writeTestFile(t, pol, fmt.Sprintf(`{"filesystem": {"readWrite": [%q]},
  "toolScopes": {"t": {"allow": [{"name": "sh", "command": "/bin/sh", "argPatterns": [["-c"]], "allowExtraArgs": true}]}}}`, sig))
	return pol, filepath.Join(testutil.SmallTmpfs(t, 64<<10), "audit.jsonl"), sig
}

// TestRunOutcomeOnFullDisk runs "airlock run" whose audit log's disk
// fills while the command runs: the command ran and exited 0, but its
// outcome and teardown could not be recorded, so airlock exits 74, says
// so on stderr, and the result keeps the command's own 0.
func TestRunOutcomeOnFullDisk(t *testing.T) {
	pol, logFile, sig := fullDiskSetup(t)
	result := filepath.Join(t.TempDir(), "r.json")
	done := make(chan [3]string, 1)
	go func() {
		code, _, stderr := airlockCmd(t, "--policy", pol, "run", "--tool", "t", "--audit", logFile, "--result", result,
			"--", "/bin/sh", "-c", gatedCommand(sig))
		done <- [3]string{strconv.Itoa(code), stderr}
	}()
	defer fillWhileRunning(t, sig, logFile)()
	got := <-done
	if got[0] != strconv.Itoa(enforcer.ExitAudit) ||
		!strings.Contains(got[1], "airlock: audit: error: the resource info record was not written: audit: write "+logFile+": no space left on device") {
		t.Errorf("exit %s, stderr %q; want 74 and the audit error line", got[0], got[1])
	}
	var res enforcer.Result
	b, _ := os.ReadFile(result)
	if err := json.Unmarshal(b, &res); err != nil || res.ExitCode != enforcer.ExitAudit || res.CommandExitCode == nil || *res.CommandExitCode != 0 ||
		!strings.HasPrefix(res.AuditError, "the resource info record was not written") {
		t.Errorf("result: %s (%v)", b, err)
	}
}

// TestSessionOnFullDisk runs a session whose audit log's disk fills: a
// step whose outcome cannot be recorded exits 74 (its command's 0 kept);
// one whose decision cannot be made durable runs nothing (125); and
// "session stop", whose teardown cannot be recorded, stops the session,
// prints its summary and exits 74 with the audit error line. Before,
// session stop exited 125 ("could not stop") with no summary, though the
// session was gone.
func TestSessionOnFullDisk(t *testing.T) {
	pol, logFile, sig := fullDiskSetup(t)
	code, out, stderr := airlockCmd(t, "--policy", pol, "session", "start", "--audit", logFile)
	if code != exitOK {
		t.Fatalf("session start: %d %s", code, stderr)
	}
	id := strings.TrimSpace(out)
	done := make(chan [3]string, 1)
	go func() {
		code, _, stderr := airlockCmd(t, "session", "exec", id, "--tool", "t", "--", "/bin/sh", "-c", gatedCommand(sig))
		done <- [3]string{strconv.Itoa(code), stderr}
	}()
	free := fillWhileRunning(t, sig, logFile)
	defer func() { free() }()
	got := <-done
	if got[0] != strconv.Itoa(enforcer.ExitAudit) || !strings.Contains(got[1], "airlock: audit: error: the resource info record was not written: ") ||
		strings.Count(got[1], "\n") != 1 {
		t.Errorf("the step: exit %s, stderr %q; want 74 and the audit error line alone", got[0], got[1])
	}
	ran := filepath.Join(sig, "ran")
	if code, _, stderr := airlockCmd(t, "session", "exec", id, "--tool", "t", "--", "/bin/sh", "-c", "touch "+ran); code != exitSetup ||
		!strings.Contains(stderr, "no space left on device") {
		t.Errorf("a step on the full disk: exit %d, stderr %q; want 125", code, stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a step whose decision was not durable ran")
	}
	code, out, stderr = airlockCmd(t, "session", "stop", id, "--json")
	var sum enforcer.SessionSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Session != id || sum.Steps != 2 ||
		!strings.HasPrefix(sum.AuditError, "the lifecycle sandbox_torn_down record was not written") {
		t.Errorf("session stop's summary: %s (%v)", out, err)
	}
	if code != enforcer.ExitAudit || !strings.Contains(stderr, "airlock: audit: error: the lifecycle sandbox_torn_down record was not written: audit: write "+logFile+": no space left on device\n") {
		t.Errorf("session stop: exit %d, stderr %q; want 74 and the audit error line", code, stderr)
	}
	if code, _, _ := airlockCmd(t, "session", "exec", id, "--tool", "t", "--", "/bin/true"); code != exitSetup {
		t.Errorf("the stopped session ran a step: exit %d", code)
	}
	free()
	free = func() {}
	if code, out, errs := airlockCmd(t, "audit", "verify", logFile); code != exitOK {
		t.Errorf("audit verify: %d %s%s", code, out, errs)
	}
}
