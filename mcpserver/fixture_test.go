package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/mcpserver"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// serveEnv, when set, names the setup the test binary serves on stdio.
const serveEnv = "AIRLOCK_MCPSERVER_TEST_SERVE"

// testPolicy has a shell for state and long commands, and a reader with
// every kind of rule, each with a justification.
const testPolicy = `{
  "toolScopes": {
    "shell": {"allow": [
      {"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true},
      {"name": "sleep", "command": "sleep", "allowExtraArgs": true}],
      "caps": {"wallSeconds": 60, "cpuSeconds": 30}},
    "read_file": {
      "allow": [{"name": "cat", "command": "cat", "argPatterns": [["/workspace/README"], ["/tmp/note"]],
                 "justification": "reads the project's files"}],
      "escalate": [{"name": "hostname", "command": "cat", "argPatterns": [["/etc/hostname"]],
                    "justification": "names the host: a person decides"}],
      "deny": [{"name": "no-shadow", "command": "cat", "argPatterns": [["/etc/shadow"]],
                "justification": "the host's password hashes are never read"}]}
  }
}`

// setup is what a server is built from; a stdio child gets it as JSON.
type setup struct {
	Policy, Audit, Approvals, Workspace, Findings, Patch string
	MaxSessions, MaxClients, Pool                        int
}

// fixture is one test's files: policy, audit log, approval store,
// workspace, and where findings and patches go.
type fixture struct {
	setup
	dir string
}

func newFixture(t testing.TB, pol string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, setup: setup{
		Policy: filepath.Join(dir, "policy.json"), Audit: filepath.Join(dir, "audit.jsonl"),
		Approvals: filepath.Join(dir, "approvals"), Workspace: filepath.Join(dir, "ws"),
		Findings: filepath.Join(dir, "findings"), Patch: filepath.Join(dir, "out", "agent.patch")}}
	for _, d := range []string{f.Approvals, f.Workspace, filepath.Dir(f.Patch)} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(f.Policy, []byte(pol), 0o600))
	must(t, os.WriteFile(filepath.Join(f.Workspace, "README"), []byte("hello from the workspace\n"), 0o644))
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// build makes the Server of s, as airlock mcp does: elicitation as the
// approver, the approval store that airlock approve answers.
func build(s setup, notices io.Writer) (*mcpserver.Server, func(), error) {
	pol, err := policy.Load(s.Policy)
	if err != nil {
		return nil, nil, err
	}
	log, err := audit.Open(s.Audit)
	if err != nil {
		return nil, nil, err
	}
	store, err := approval.OpenStore(s.Approvals)
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	var self sandbox.Config
	self.BindSelf() // the test binary at /.airlock/self, for its payload (main_test.go)
	enf, err := enforcer.New(pol, log, enforcer.Options{Approver: mcpserver.Elicitation{}, Approvals: store, Hide: []string{s.Approvals}, Binds: self.Binds})
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	cfg := mcpserver.Config{Workspace: s.Workspace, Findings: s.Findings, Patch: s.Patch, MaxSessions: s.MaxSessions, MaxClients: s.MaxClients, Pool: s.Pool, Version: "test"}
	if notices != nil {
		cfg.Notices = notices
	} else {
		cfg.Notices = os.Stderr
	}
	srv, err := mcpserver.New(enf, cfg)
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	return srv, func() { log.Close() }, nil
}

// serveStdio is the test binary as `airlock mcp` on stdio.
func serveStdio(js string) int {
	var s setup
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	srv, done, err := build(s, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	defer done()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := srv.ServeStdio(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serverCommand runs the test binary as the fixture's stdio server.
func (f *fixture) serverCommand(t testing.TB) *exec.Cmd {
	js, err := json.Marshal(f.setup)
	must(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	return cmd
}

// stdioClient connects a Go SDK client to a fresh stdio server of f.
func (f *fixture) stdioClient(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: f.serverCommand(t), TerminateDuration: time.Minute}, nil)
	must(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// memoryClient connects a client to srv in memory.
func memoryClient(t *testing.T, srv *mcpserver.Server, name string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	_, err := srv.Connect(context.Background(), st)
	must(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(context.Background(), ct, nil)
	must(t, err)
	return cs
}

// httpServer serves f over HTTP on a loopback port in this process.
func (f *fixture) httpServer(t *testing.T) (url, token string) {
	t.Helper()
	_, url, token = f.httpServerOf(t)
	return url, token
}

// httpServerOf is httpServer that returns the Server too.
func (f *fixture) httpServerOf(t *testing.T) (srv *mcpserver.Server, url, token string) {
	t.Helper()
	srv, done, err := build(f.setup, nil)
	must(t, err)
	token = mcpserver.NewToken()
	h, err := srv.Handler(token)
	must(t, err)
	ln, err := mcpserver.Listen("127.0.0.1:0", false)
	must(t, err)
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	t.Cleanup(func() {
		must(t, srv.Close(context.Background()))
		hs.Close()
		done()
	})
	return srv, "http://" + ln.Addr().String() + "/", token
}

// bearer adds the token to every request of a client transport.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// httpClient connects a Go SDK client over the streamable transport.
func httpClient(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-http-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := c.Connect(context.Background(), tr, nil)
	must(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// run calls a command tool and decodes its result.
func run(t *testing.T, cs *mcp.ClientSession, tool, command string, args ...string) (*mcp.CallToolResult, enforcer.Result) {
	t.Helper()
	return callTool(t, context.Background(), cs, tool, map[string]any{"command": command, "args": args})
}

func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, in map[string]any) (*mcp.CallToolResult, enforcer.Result) {
	t.Helper()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: in})
	must(t, err)
	var res enforcer.Result
	b, err := json.Marshal(r.StructuredContent)
	must(t, err)
	must(t, json.Unmarshal(b, &res))
	return r, res
}

// text is a tool result's text content.
func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// sessionOf is the MCP session id a tool result names.
func sessionOf(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	id, _ := r.Meta[mcpserver.MetaSession].(string)
	if !strings.HasPrefix(id, "mcp-") {
		t.Fatalf("result's _meta has no MCP session id: %v", r.Meta)
	}
	return id
}

// events reads the audit log's events whose details.session is id.
func (f *fixture) events(t *testing.T, id string) []audit.Event {
	t.Helper()
	data, err := os.ReadFile(f.Audit)
	must(t, err)
	var out []audit.Event
	for _, line := range bytes.Split(data, []byte("\n")) {
		if ev, err := audit.ParseLine(line); err == nil && (audit.Filter{Session: id}).Match(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
