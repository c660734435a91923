package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/linelog"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// Config says where a Server's sandbox sessions take their workspace and
// leave what they made. Its zero value serves an empty workspace with no
// egress task, and keeps neither findings nor patches.
type Config struct {
	// Task names the egress allowlist that every sandbox session's proxy
	// serves; "" means policy.NoTask, no destination.
	Task string
	// Workspace is the host directory copied into each sandbox session's
	// /workspace ("" for an empty one).
	Workspace string
	// Findings is a host directory; each sandbox session's /findings is
	// copied to Findings/ID when it ends ("" discards them).
	Findings string
	// Patch is a file name; each sandbox session's workspace changes are
	// written, when the server closes it, to this name with ".ID" put
	// before its extension (PatchPath), never over an existing file.
	Patch string
	// MaxSessions bounds the sandbox sessions open at once, of all
	// clients together; a call that would open one more is refused. 0
	// means DefaultMaxSessions.
	MaxSessions int
	// MaxClients bounds the MCP sessions the streamable HTTP handler
	// holds at once, an initialized one that never called a tool
	// included; a request that would open one more is answered 503. 0
	// means DefaultMaxClients.
	MaxClients int
	// Pool is how many sandboxes the server keeps built ahead for its
	// policy and Task (enforcer.Pool), 0 to enforcer.MaxPool; each MCP
	// session's sandbox session opens on one when one is ready, cold
	// otherwise. 0, the default, builds none ahead (docs/mcp.md,
	// "Sandboxes built ahead").
	Pool int
	// Version is the server's version, as the clients are told it.
	Version string
	// Notices receives one line when a client's sandbox session opens or
	// closes, and why; nil means none. A reader that stops reading never
	// stops the server (internal/linelog).
	Notices io.Writer
}

// Server is an MCP server over one Enforcer: a client's tool calls run as
// the steps of sandbox sessions of its own (docs/mcp.md). Its methods are
// safe for concurrent use.
type Server struct {
	enf   *enforcer.Enforcer
	cfg   Config
	mcp   *mcp.Server
	notes *linelog.Writer
	caps  policy.EffectiveSession
	idle  time.Duration  // when the server closes an idle sandbox session itself
	pool  *enforcer.Pool // sandboxes built ahead; nil without Config.Pool

	slots chan struct{} // one per MCP session the HTTP handler holds (Config.MaxClients)

	mu         sync.Mutex
	clients    map[*mcp.ServerSession]*client
	held       map[string]chan struct{} // MCP session id → closed when its place is given back
	open       int                      // sandbox sessions open
	closed     bool
	unrecorded string         // the first record of a session the audit log refused
	short      string         // the first sandbox session whose patch is short, and why
	wg         sync.WaitGroup // the clients' watchers
}

// DefaultMaxSessions is Config.MaxSessions when it is 0: a client that
// opens MCP sessions in a loop gets no more sandboxes than this.
const DefaultMaxSessions = 16

// DefaultMaxClients is Config.MaxClients when it is 0: an MCP session
// that only initialized costs the server some 30 KiB until it ends.
const DefaultMaxClients = 64

// sessionVersions are the protocol versions the server speaks: every
// version the SDK has before 2026-07-28, whose stateless protocol has no
// session for a sandbox session to belong to, and whose tool calls cannot
// ask the client while they run (docs/mcp.md, "Protocol").
func sessionVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
}

// instructions is what the server tells a client about itself.
const instructions = `airlock runs each tool's command in a Linux sandbox after its command gate has decided it against the tool's scope; ` +
	`every call of this MCP session shares one sandbox (/workspace and /tmp are kept). A refused call says why, whether a retry can help, ` +
	`and what would pass. ` + ChangesTool + ` shows what changed in /workspace; ` + FindingsTool + ` what /findings holds.`

// New returns a Server of enf's policy's tools: one MCP tool per tool
// scope, and the session tools ChangesTool and FindingsTool. A tool scope
// whose name is not an MCP tool name (1 to 128 letters, digits, '_', '-'
// and '.') or is a session tool's is an error. With Config.Pool it starts
// building that many sandboxes ahead; Close tears down those not handed
// out.
func New(enf *enforcer.Enforcer, cfg Config) (*Server, error) {
	pol := enf.Policy()
	if cfg.Task == "" {
		cfg.Task = policy.NoTask
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.Pool < 0 || cfg.Pool > enforcer.MaxPool {
		return nil, fmt.Errorf("mcpserver: pool of %d sandboxes: want 0 to %d", cfg.Pool, enforcer.MaxPool)
	}
	s := &Server{enf: enf, cfg: cfg, caps: pol.SessionCaps(), clients: map[*mcp.ServerSession]*client{}, held: map[string]chan struct{}{},
		slots: make(chan struct{}, cfg.MaxClients)}
	s.idle = earlier(s.caps.Idle())
	if cfg.Notices != nil {
		s.notes = linelog.New(cfg.Notices)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "airlock", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: instructions, SupportedProtocolVersions: sessionVersions()})
	for _, name := range slices.Sorted(maps.Keys(pol.ToolScopes)) {
		switch {
		case !validToolName(name):
			return nil, fmt.Errorf("mcpserver: tool scope %q cannot be an MCP tool: a tool's name is 1 to 128 letters, digits, '_', '-' or '.'", name)
		case name == ChangesTool || name == FindingsTool:
			return nil, fmt.Errorf("mcpserver: tool scope %q has the name of airlock's own session tool: rename it", name)
		}
		mcp.AddTool(s.mcp, commandTool(pol, name, cfg.Task), s.runTool(name))
	}
	mcp.AddTool(s.mcp, changesTool(), s.changes)
	mcp.AddTool(s.mcp, findingsTool(), s.findings)
	if cfg.Pool > 0 {
		p, err := enf.NewPool(context.Background(), enforcer.PoolRequest{Size: cfg.Pool, Task: cfg.Task})
		if err != nil {
			return nil, fmt.Errorf("mcpserver: %w", err)
		}
		s.pool = p
	}
	return s, nil
}

// earlier is when the server closes an idle sandbox session itself: a
// little before the session's own idle timeout would, so that its patch
// can still be written (the session's own end loses it): 5% earlier, at
// least a second and at most 30 seconds, never more than half of it.
func earlier(idle time.Duration) time.Duration {
	margin := min(max(idle/20, time.Second), 30*time.Second, idle/2)
	return idle - margin
}

// resultSchema is a command tool's output schema: the result contract's
// generated schema (docs/result.md), as `airlock schema result` prints it.
var resultSchema = json.RawMessage(enforcer.ResultSchema())

// Connect serves one client over t (an in-memory transport, a test's
// pipe) until the client goes or ctx ends; its sandbox sessions are closed
// when it goes.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, t, nil)
}

// ServeStdio serves one client on standard input and output until it
// closes its end (EOF) or ctx ends, then closes every sandbox session,
// writing their findings and patches.
func (s *Server) ServeStdio(ctx context.Context) error {
	err := s.mcp.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil {
		err = nil // a shutdown, not a failure
	}
	return errors.Join(err, s.Close(context.WithoutCancel(ctx)))
}

// Close tears down the sandboxes built ahead and not handed out, closes
// every client's sandbox session, writing its findings and patch, ends
// every MCP session, and serves no new one; it waits for them or for ctx.
// Its error wraps enforcer.ErrAudit when a record of any sandbox session
// the server ran (a call's, a teardown) could not be written to the audit
// log: each was a notice, and the call's result, as it happened; and it
// wraps changes.ErrIncomplete when the patch of one (Config.Patch) leaves
// changes out, could not be written, or was lost (each a notice too).
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	clients := maps.Clone(s.clients)
	s.mu.Unlock()
	if s.pool != nil {
		s.pool.Close() // a session opened later is opened cold
	}
	var wg sync.WaitGroup
	for ss, c := range clients {
		wg.Go(func() {
			c.drop("the server shut down")
			_ = ss.Close()
		})
	}
	for ss := range s.mcp.Sessions() {
		if clients[ss] == nil {
			wg.Go(func() { _ = ss.Close() }) // one that never called a tool
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.notes != nil {
		s.notes.Close(time.Second)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.unrecorded != "" {
		errs = append(errs, fmt.Errorf("mcpserver: %w: %s", enforcer.ErrAudit, s.unrecorded))
	}
	if s.short != "" {
		errs = append(errs, fmt.Errorf("mcpserver: %w: %s", changes.ErrIncomplete, s.short))
	}
	return errors.Join(errs...)
}

// shortPatch keeps the first sandbox session whose patch is short, for
// Close.
func (s *Server) shortPatch(id, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.short == "" {
		s.short = "the patch of sandbox session " + id + " " + why
	}
}

// lost says, in a notice, that the audit log refused a record of MCP
// session id's (AuditError), and keeps the first for Close.
func (s *Server) lost(id, record string) {
	if record == "" {
		return
	}
	s.notice("%s: audit: error: %s", id, termtext.Escape(record))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unrecorded == "" {
		s.unrecorded = record
	}
}

// reserve takes one of the MaxSessions places for a sandbox session;
// release gives it back.
func (s *Server) reserve() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open >= s.cfg.MaxSessions {
		return fmt.Errorf("mcpserver: %d sandbox sessions are open, as many as this server runs at once: "+
			"try again when a client has gone or been idle", s.open)
	}
	s.open++
	return nil
}

func (s *Server) release() {
	s.mu.Lock()
	s.open--
	s.mu.Unlock()
}

// notice writes one line to Config.Notices.
func (s *Server) notice(format string, args ...any) {
	if s.notes != nil {
		s.notes.Printf("airlock: mcp: "+format, args...)
	}
}
