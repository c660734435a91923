package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/mcpserver"
)

const mcpTestPolicy = `{"toolScopes": {
  "shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}]},
  "read_file": {"allow": [{"name": "cat", "command": "cat", "argPatterns": [["/workspace/README"]]}],
                "escalate": [{"name": "hostname", "command": "cat", "argPatterns": [["/etc/hostname"]]}]}}}`

// mcpDir lays out a policy, a workspace and an output directory, and
// returns airlock's path and the environment its runs get (their own
// state directory: approval store and signing key).
func mcpDir(t *testing.T) (bin, dir string, env []string) {
	t.Helper()
	bin, err := exec.LookPath("airlock") // put on $PATH by testscript.Main
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	for _, d := range []string{"ws", "out"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.json"), []byte(mcpTestPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ws", "README"), []byte("read me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, dir, append(os.Environ(), "AIRLOCK_POLICY=", "AIRLOCK_AUDIT_KEY=", "XDG_STATE_HOME="+filepath.Join(dir, "state"))
}

// mcpCall calls a tool and decodes its result.
func mcpCall(t *testing.T, cs *mcp.ClientSession, tool, command string, args ...string) (*mcp.CallToolResult, enforcer.Result) {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"command": command, "args": args}})
	if err != nil {
		t.Fatal(err)
	}
	var res enforcer.Result
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return r, res
}

// TestMCPStdio runs the built airlock as an MCP server for the Go SDK's
// client over stdio, twice, and shows each client's MCP session alone
// with airlock audit timeline --session; the log verifies.
func TestMCPStdio(t *testing.T) {
	testutil.RequireRoot(t)
	bin, dir, env := mcpDir(t)
	session := func(script string) string {
		cmd := exec.Command(bin, "mcp", "--policy", "policy.json", "--workspace", "ws", "--findings", "findings",
			"--patch", "out/agent.patch", "--audit", "audit.jsonl")
		cmd.Dir, cmd.Env, cmd.Stderr = dir, env, os.Stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, res := mcpCall(t, cs, "shell", "sh", "-c", script)
		if r.IsError || res.ExitCode != 0 {
			t.Fatalf("allowed call: %+v", res)
		}
		if r, res := mcpCall(t, cs, "read_file", "cat", "/etc/shadow"); !r.IsError || res.Refusal == nil {
			t.Fatalf("denied call: %+v", res)
		}
		id, _ := r.Meta[mcpserver.MetaSession].(string)
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil && !errors.Is(err, os.ErrProcessDone) && cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("airlock mcp exited %v", err)
		}
		return id
	}
	first, second := session("echo one > /workspace/a"), session("echo two > /workspace/b")
	if b, err := os.ReadFile(filepath.Join(dir, "out", "agent."+first+".patch")); err != nil || !strings.Contains(string(b), "+one") {
		t.Errorf("the first session's patch: %q %v", b, err)
	}
	timeline := exec.Command(bin, "audit", "timeline", "--session", first, "audit.jsonl")
	timeline.Dir, timeline.Env = dir, env
	out, err := timeline.CombinedOutput()
	if err != nil {
		t.Fatalf("audit timeline: %v\n%s", err, out)
	}
	for _, want := range []string{first, "allow", "deny", "sandbox_launched", "sandbox_torn_down"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the timeline of %s lacks %q:\n%s", first, want, out)
		}
	}
	if strings.Contains(string(out), second) {
		t.Errorf("the timeline of %s shows %s:\n%s", first, second, out)
	}
	verify := exec.Command(bin, "audit", "verify", "audit.jsonl")
	verify.Dir, verify.Env = dir, env
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, out)
	}
}

// TestMCPShortPatch: a sandbox session whose patch leaves changes out (a
// fifo, a file under .git) says so in airlock_changes's result, one
// stderr line for each class when it closes, and airlock mcp exits 73.
func TestMCPShortPatch(t *testing.T) {
	testutil.RequireRoot(t)
	bin, dir, env := mcpDir(t)
	cmd := exec.Command(bin, "mcp", "--policy", "policy.json", "--workspace", "ws", "--patch", "out/agent.patch", "--audit", "audit.jsonl")
	var stderr strings.Builder
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, res := mcpCall(t, cs, "shell", "sh", "-c", "cd /workspace && mkfifo f && mkdir .git && echo x > .git/config && echo ok > ok"); r.IsError || res.ExitCode != 0 {
		t.Fatalf("call: %+v", res)
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ChangesTool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var ch mcpserver.Changes
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &ch); err != nil {
		t.Fatal(err)
	}
	if len(ch.Omissions) != 2 || ch.Omissions[0].Class != changes.OmitSkipped || ch.Omissions[1].Class != changes.OmitGit {
		t.Errorf("airlock_changes's omissions: %+v, want skipped and git", ch.Omissions)
	}
	cs.Close() // waits for airlock mcp to exit, and says how it did
	if code := cmd.ProcessState.ExitCode(); code != exitPatchShort {
		t.Errorf("airlock mcp exited %d, want %d", code, exitPatchShort)
	}
	for _, want := range []string{"patch: 1 change not in the patch (skipped)", "patch: 1 change not in the patch (git)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// startMCPHTTP starts airlock mcp --http on a loopback port with a fresh
// token in dir/token, and extra flags; it returns the server, its URL, and
// the rest of its stderr's lines once it has exited.
func startMCPHTTP(t *testing.T, bin, dir string, env []string, extra ...string) (*exec.Cmd, string, chan []string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp", "--policy", "policy.json", "--workspace", "ws", "--patch", "out/agent.patch",
		"--audit", "audit.jsonl", "--http", "127.0.0.1:0", "--token-file", "token"}, extra...)...)
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	var url string
	for lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "serving "); ok {
			url = strings.Fields(u)[0]
			break
		}
	}
	drained := make(chan []string)
	go func() {
		var rest []string
		for lines.Scan() {
			rest = append(rest, lines.Text())
		}
		drained <- rest
	}()
	return cmd, url, drained
}

// TestMCPHTTP runs airlock mcp --http: it writes a fresh token to a 0600
// file, answers 401 without it, serves the Go SDK's client with it, and on
// SIGTERM closes the client's sandbox session (its patch written) and
// exits 0.
func TestMCPHTTP(t *testing.T) {
	testutil.RequireRoot(t)
	bin, dir, env := mcpDir(t)
	cmd, url, drained := startMCPHTTP(t, bin, dir, env)
	fi, err := os.Stat(filepath.Join(dir, "token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	token, _ := os.ReadFile(filepath.Join(dir, "token"))
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %s", resp.Status)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport(strings.TrimSpace(string(token)))}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-http", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, res := mcpCall(t, cs, "shell", "sh", "-c", "echo http > /workspace/h")
	if r.IsError || res.ExitCode != 0 {
		t.Fatalf("over HTTP: %+v", res)
	}
	id, _ := r.Meta[mcpserver.MetaSession].(string)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.Join(<-drained, "\n"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("airlock mcp after SIGTERM: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "agent."+id+".patch")); err != nil || !strings.Contains(string(b), "+http") {
		t.Errorf("the patch after SIGTERM: %q %v", b, err)
	}
	testutil.CheckNoSandboxLeft(t, id)
}

// TestMCPFlags: the flags that make no sense are refused before anything
// starts.
func TestMCPFlags(t *testing.T) {
	bin, dir, env := mcpDir(t)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--token-file", "t"}, exitUsage, "go with --http"},
		{[]string{"--http", "0.0.0.0:0", "--token-file", "t"}, exitSetup, "not a loopback address"},
		{[]string{"--http", "127.0.0.1:0"}, exitSetup, "needs a bearer token"},
		{[]string{"--patch", "nowhere/agent.patch"}, exitSetup, "its directory must exist"},
		{[]string{"--pool", "17"}, exitUsage, "--pool 17: want 0 to 16"},
		{[]string{"--pool", "-1"}, exitUsage, "--pool -1: want 0 to 16"},
		{[]string{"--max-clients", "8"}, exitUsage, "--max-clients go with --http"},
		{[]string{"--http", "127.0.0.1:0", "--max-clients", "0"}, exitUsage, "--max-clients 0: want 1 or more"},
	} {
		cmd := exec.Command(bin, append([]string{"mcp", "--policy", "policy.json", "--audit", "audit.jsonl"}, c.args...)...)
		cmd.Dir, cmd.Env = dir, append(env, "AIRLOCK_MCP_TOKEN=")
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != c.code || !strings.Contains(string(out), c.says) {
			t.Errorf("airlock mcp %v: exit %d, want %d saying %q:\n%s", c.args, cmd.ProcessState.ExitCode(), c.code, c.says, out)
		}
	}
}

// TestMCPNoElicitation: with --no-elicitation a client that could be
// asked is not; the refusal says how an operator approves the request.
func TestMCPNoElicitation(t *testing.T) {
	testutil.RequireRoot(t)
	bin, dir, env := mcpDir(t)
	cmd := exec.Command(bin, "mcp", "--policy", "policy.json", "--audit", "audit.jsonl", "--no-elicitation")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, os.Stderr
	asked := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("asked through elicitation despite --no-elicitation")
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: asked}).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, res := mcpCall(t, cs, "read_file", "cat", "/etc/hostname")
	if !r.IsError || res.Refusal == nil || res.Refusal.Approval == nil || !strings.Contains(res.Refusal.Approval.How, "airlock approve "+res.Refusal.Approval.ID) {
		t.Fatalf("escalated with --no-elicitation: %+v", res.Refusal)
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPPool runs airlock mcp --pool 1 --http: clients come one after
// another until one's sandbox session opens on the sandbox built ahead
// (the audit log says so), a second's does too once the pool has built
// another, neither sees the other's /tmp; on SIGTERM airlock exits 0 with
// nothing of its pool left.
func TestMCPPool(t *testing.T) {
	testutil.RequireRoot(t)
	bin, dir, env := mcpDir(t)
	before := testutil.EmptyCgroups("sandbox-pool-")
	cmd, url, drained := startMCPHTTP(t, bin, dir, env, "--pool", "1")
	token, _ := os.ReadFile(filepath.Join(dir, "token"))
	pooled := func(script string) string {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport(strings.TrimSpace(string(token)))}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-pool", Version: "1"}, nil).Connect(context.Background(), tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, res := mcpCall(t, cs, "shell", "sh", "-c", script)
			cs.Close()
			if r.IsError || res.ExitCode != 0 {
				t.Fatalf("call: %+v", res)
			}
			if id, _ := r.Meta[mcpserver.MetaSession].(string); builtAhead(t, filepath.Join(dir, "audit.jsonl"), id) {
				return res.Stdout.Text
			}
		}
		t.Fatal("no client's sandbox session opened on a sandbox built ahead in 30s")
		return ""
	}
	pooled("echo one > /tmp/mark")
	if got := pooled("ls -A /tmp"); strings.Contains(got, "mark") {
		t.Errorf("the second pooled session sees the first's /tmp: %q", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.Join(<-drained, "\n"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("airlock mcp --pool after SIGTERM: %v", err)
	}
	testutil.CheckNoEmptyCgroupLeft(t, "sandbox-pool-", before)
}

// builtAhead reports whether the audit log at path says that the sandbox
// session of MCP session id opened on a sandbox built ahead.
func builtAhead(t *testing.T, path, id string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		ev, err := audit.ParseLine([]byte(line))
		if err == nil && (audit.Filter{Session: id}).Match(ev) && ev.Context.Event == audit.EventSandboxLaunched {
			return strings.Contains(ev.Reason, "built ahead")
		}
	}
	return false
}

// TestMCPPoolSetupFails: an airlock mcp --pool that cannot serve (no
// bearer token, an address taken) tears its pool down before it exits.
func TestMCPPoolSetupFails(t *testing.T) {
	testutil.RequireRoot(t)
	bin, dir, env := mcpDir(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--http", "127.0.0.1:0"}, "needs a bearer token"},
		{[]string{"--http", taken.Addr().String(), "--token-file", "t"}, "address already in use"},
	} {
		before := testutil.EmptyCgroups("sandbox-pool-")
		cmd := exec.Command(bin, append([]string{"mcp", "--policy", "policy.json", "--audit", "audit.jsonl", "--pool", "2"}, c.args...)...)
		cmd.Dir, cmd.Env = dir, append(env, "AIRLOCK_MCP_TOKEN=")
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != exitSetup || !strings.Contains(string(out), c.says) {
			t.Errorf("airlock mcp %v: exit %d, want %d saying %q:\n%s", c.args, cmd.ProcessState.ExitCode(), exitSetup, c.says, out)
		}
		testutil.CheckNoEmptyCgroupLeft(t, "sandbox-pool-", before)
	}
}

// TestMCPStderrClosed: an airlock mcp --http --pool whose stderr's reader
// has gone goes on serving (a notice it cannot write is dropped, not its
// death by SIGPIPE, which would leave its sandboxes without their
// teardown), and on SIGTERM exits 0 with nothing of its pool left.
func TestMCPStderrClosed(t *testing.T) {
	testutil.RequireRoot(t)
	bin, dir, env := mcpDir(t)
	before := testutil.EmptyCgroups("sandbox-pool-")
	cmd := exec.Command(bin, "mcp", "--policy", "policy.json", "--audit", "audit.jsonl", "--pool", "1",
		"--http", "127.0.0.1:0", "--token-file", "token")
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "serving "); ok {
			url = strings.Fields(u)[0]
		}
	}
	stderr.Close() // the reader goes
	token, _ := os.ReadFile(filepath.Join(dir, "token"))
	for i := range 2 { // each call's sandbox session opening writes a notice
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport(strings.TrimSpace(string(token)))}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-stderr", Version: "1"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if r, res := mcpCall(t, cs, "shell", "sh", "-c", "true"); r.IsError || res.ExitCode != 0 {
			t.Fatalf("call %d: %+v", i, res)
		}
		cs.Close()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("airlock mcp with its stderr closed: %v", err)
	}
	testutil.CheckNoEmptyCgroupLeft(t, "sandbox-pool-", before)
}
