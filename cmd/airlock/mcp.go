package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/mcpserver"
	"github.com/airlock-sandbox/airlock/policy"
)

// tokenEnv holds the HTTP transport's bearer token when --token-file is
// not given.
const tokenEnv = "AIRLOCK_MCP_TOKEN"

func newMCPCmd() *cobra.Command {
	var (
		cfg                 mcpserver.Config
		auditFile, httpAddr string
		tokenFile           string
		remote, noElicit    bool
	)
	cmd := &cobra.Command{
		Use:   "mcp [--task K] [--workspace DIR] [--findings DIR] [--patch FILE] [--pool N] [--http ADDR --token-file FILE --max-clients N] [--no-elicitation] [--audit FILE]",
		Short: "Serve the policy's tools to an agent over the Model Context Protocol",
		Long: `mcp serves every tool scope of the policy as an MCP tool of the same name, on
stdin and stdout (or, with --http, the streamable HTTP transport on a loopback
address). Each call runs one command in the client's own sandbox session,
decided at the command gate against that tool and recorded in the audit
stream; /workspace (a copy of --workspace) and /tmp are kept between a
client's calls, never shared with another client. An escalated command asks
the person at the client through MCP elicitation (unless the policy names a
decider, or --no-elicitation), or waits for airlock approve ID. When a client goes, after the policy's idle timeout, or
on SIGTERM or SIGINT, its sandbox session is closed: its /findings copied to
--findings/ID and its patch written to --patch with .ID before the extension.

--pool N keeps N sandboxes (1 to 16) built ahead for the policy and --task, so
that a client's first call does not wait for one: each serves one sandbox
session only and is torn down with it; another is built in the background.

--http ADDR needs a bearer token: --token-file FILE gets a fresh one (mode
0600), else $AIRLOCK_MCP_TOKEN is the token. It holds at most --max-clients
MCP sessions at once (64 by default), one that only initialized included: a
request for one more is answered 503. See docs/mcp.md.

Exit status 0 when the client went or a signal stopped it; 73 when the patch
of a session it closed leaves changes out, could not be written, or was lost
with a session that ended by itself (a line on stderr for each class of the
changes left out, as the session closed); 74 when, by then, the audit log had
refused a record of a session it ran (a full disk: each one an "audit: error"
line on stderr as it happened, and in the call's result; 74 wins over 73);
125 when it could not start; 2 for a mistake in the command line.`,
		Example: `  airlock mcp --policy policy.json --workspace . --patch agent.patch
  airlock mcp --http 127.0.0.1:8765 --token-file ~/.airlock-mcp-token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			serverGC()
			if cfg.Pool < 0 || cfg.Pool > enforcer.MaxPool {
				return usageError{fmt.Errorf("mcp: --pool %d: want 0 to %d", cfg.Pool, enforcer.MaxPool)}
			}
			if httpAddr == "" && (tokenFile != "" || remote || cmd.Flags().Changed("max-clients")) {
				return usageError{errors.New("mcp: --token-file, --allow-remote and --max-clients go with --http")}
			}
			if cfg.MaxClients < 1 {
				return usageError{fmt.Errorf("mcp: --max-clients %d: want 1 or more", cfg.MaxClients)}
			}
			for _, p := range []*string{&cfg.Workspace, &cfg.Findings, &cfg.Patch, &tokenFile} {
				if err := absolute(p); err != nil {
					return &exitError{Code: exitSetup, Err: err}
				}
			}
			if cfg.Patch != "" {
				if fi, err := os.Stat(filepath.Dir(cfg.Patch)); err != nil || !fi.IsDir() {
					return &exitError{Code: exitSetup, Err: fmt.Errorf("mcp: --patch %s: its directory must exist", cfg.Patch)}
				}
			}
			err := serveMCP(cmd, cfg, auditFile, httpAddr, tokenFile, remote, noElicit)
			switch {
			case errors.Is(err, enforcer.ErrAudit):
				// Each record lost was a notice as it happened.
				return &exitError{Code: enforcer.ExitAudit}
			case errors.Is(err, changes.ErrIncomplete):
				// Each short patch was a notice when its session closed.
				return &exitError{Code: exitPatchShort}
			case err != nil:
				return &exitError{Code: exitSetup, Err: fmt.Errorf("mcp: %w", err)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Task, "task", "", "egress task whose allowlist every session's proxy serves (default: none, no destination)")
	f.StringVar(&cfg.Workspace, "workspace", "", "host directory copied into each session's /workspace")
	f.StringVar(&cfg.Findings, "findings", "", "host directory: each session's /findings is copied to DIR/ID when it ends")
	f.StringVar(&cfg.Patch, "patch", "", "each session's workspace changes go to this file name with .ID before its extension")
	f.IntVar(&cfg.Pool, "pool", 0, "keep this many sandboxes built ahead, 1 to 16 (default: none, each opened when needed)")
	f.StringVar(&httpAddr, "http", "", "serve the streamable HTTP transport on this loopback address (host:port) instead of stdio")
	f.StringVar(&tokenFile, "token-file", "", "with --http: write a fresh bearer token to this file, mode 0600 (default: take $"+tokenEnv+")")
	f.IntVar(&cfg.MaxClients, "max-clients", mcpserver.DefaultMaxClients, "with --http: hold at most this many MCP sessions at once; a request for one more is answered 503")
	f.BoolVar(&remote, "allow-remote", false, "with --http: listen on an address that is not loopback (the bearer token is then the only guard)")
	f.BoolVar(&noElicit, "no-elicitation", false, "never ask the client's person: escalated commands wait for airlock approve ID")
	f.StringVar(&auditFile, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	policyflag.Add(cmd)
	return cmd
}

// serveMCP builds the enforcer, with MCP elicitation as its approver
// unless the policy names a decider or --no-elicitation says not to, and
// serves until the client goes or a signal comes.
func serveMCP(cmd *cobra.Command, cfg mcpserver.Config, auditFile, httpAddr, tokenFile string, remote, noElicit bool) error {
	elicit := func(pol *policy.Loaded, opts *enforcer.Options) {
		if pol.ApprovalConfig().Decider == nil && !noElicit {
			opts.Approver = mcpserver.Elicitation{}
		}
	}
	e, closeLog, err := newEnforcer(cmd, auditFile, cfg.Workspace, cfg.Findings, elicit)
	if err != nil {
		return err
	}
	defer closeLog()
	warnTask(cmd, e.Policy().Policy, cfg.Task)
	if bi, ok := debug.ReadBuildInfo(); ok {
		cfg.Version = bi.Main.Version
	}
	cfg.Notices = cmd.ErrOrStderr()
	srv, err := mcpserver.New(e, cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A closed stderr (its reader gone) fails the notices' writes rather
	// than killing the server, which would leave its sessions and pool
	// behind without their teardown: linelog counts what it dropped.
	signal.Ignore(syscall.SIGPIPE)
	if httpAddr == "" {
		return srv.ServeStdio(ctx)
	}
	return serveMCPHTTP(ctx, cmd, srv, httpAddr, tokenFile, remote)
}

// serveMCPHTTP serves srv's streamable HTTP handler on httpAddr until ctx
// ends; srv is closed (its pool torn down) on every way out.
func serveMCPHTTP(ctx context.Context, cmd *cobra.Command, srv *mcpserver.Server, httpAddr, tokenFile string, remote bool) error {
	h, ln, err := mcpHTTPSetup(srv, httpAddr, tokenFile, remote)
	if err != nil {
		return errors.Join(err, srv.Close(context.WithoutCancel(ctx)))
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.ErrOrStderr(), "airlock: mcp: serving http://%s/ (bearer token required)\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	cerr := srv.Close(context.WithoutCancel(ctx))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		hs.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, cerr)
}

// mcpHTTPSetup takes the bearer token (writing a fresh one to tokenFile
// when given) and listens on httpAddr.
func mcpHTTPSetup(srv *mcpserver.Server, httpAddr, tokenFile string, remote bool) (http.Handler, net.Listener, error) {
	token := os.Getenv(tokenEnv)
	if tokenFile != "" {
		token = mcpserver.NewToken()
		if err := mcpserver.WriteToken(tokenFile, token); err != nil {
			return nil, nil, err
		}
	}
	if token == "" {
		return nil, nil, fmt.Errorf("--http needs a bearer token: give --token-file FILE (airlock writes a fresh one there) or set $%s", tokenEnv)
	}
	h, err := srv.Handler(token)
	if err != nil {
		return nil, nil, err
	}
	ln, err := mcpserver.Listen(httpAddr, remote)
	if err != nil {
		return nil, nil, err
	}
	return h, ln, nil
}
