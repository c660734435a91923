package enforcer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// CABundlePath is where a sandbox whose task inspects a host finds the
// bundle of the system's roots and the session's CA; the variables of
// caBundleVars point at it, and it is also bound over the system's own
// bundle files (docs/egress.md, "Inspection").
const CABundlePath = "/run/airlock/ca-bundle.pem"

// caBundleVars are the variables that make common clients trust the
// bundle: OpenSSL and Go (SSL_CERT_FILE), requests, Node, curl, git.
var caBundleVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// systemBundles are where Linux systems keep their bundle of roots (Go's
// crypto/x509 list).
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// wayOut is the way out of one sandbox, the same for every entry point
// (Run, a Session, a plan's launch): the egress proxy serving one task
// with the gate, the session's CA when the task inspects a host (and the
// sandbox's bundle of it), the credentials' values and placeholders, the
// budgets, and the record of every decision before the connection it
// allows. It is made before the sandbox starts (prepareEgress),
// Serve starts the proxy on the listener the sandbox's init opened, and
// Close stops it.
type wayOut struct {
	e       *Enforcer
	task    string
	ca      *proxy.CA
	dir     string   // holds the bundle until the sandbox has bound it
	env     []string // the bundle's variables and the placeholders
	creds   []proxy.Credential
	budgets []proxy.Budget
	px      proxyServer
	// token is what the proxy requires of every request, as proxyUser's
	// password, on a listener that is not the sandbox's own ("" on one
	// that is).
	token string
	stop  sync.Once
}

// prepareEgress prepares task's way out for the sandbox cfg configures,
// before it starts: the credentials' values (an error names the one
// missing, never a value) and their placeholders; the task's budget, per
// command, and with session the session's, for its life; and, when task
// inspects a host, a CA for life (and an hour) whose bundle cfg binds at
// CABundlePath and over the system's bundle files of its view; where the
// proxy's listener is not the sandbox's own, the token the proxy then
// requires, in cfg. Call Bound once the sandbox has started (or failed
// to).
func (e *Enforcer) prepareEgress(task string, cfg *sandbox.Config, life time.Duration, session bool) (*wayOut, error) {
	g, err := e.newEgress(task, session)
	if err != nil {
		return nil, err
	}
	if !sandbox.PrivateListener {
		// The listener is on the host's loopback, where every local
		// process can reach it: only the sandbox has the token.
		if g.token, _, err = proxy.MintToken(); err != nil {
			return nil, err
		}
		cfg.ProxyAuth = proxyUser + ":" + g.token
	}
	if !e.egress.Inspects(task) {
		return g, nil
	}
	if g.ca, err = proxy.NewCA("airlock session CA "+cfg.ID, life+time.Hour); err != nil {
		return nil, err
	}
	if err := g.bundle(cfg); err != nil {
		g.Bound()
		return nil, err
	}
	return g, nil
}

// newEgress is task's way out with no CA: its credentials' values and
// placeholders, and its budgets (with session, the session's too).
func (e *Enforcer) newEgress(task string, session bool) (*wayOut, error) {
	g := &wayOut{e: e, task: task, budgets: budgetsFor(e.pol, task, session)}
	var err error
	if g.creds, g.env, err = credentials(e.pol, e.egress, task); err != nil {
		return nil, err
	}
	return g, nil
}

// bundle writes the sandbox's bundle, the system's roots as the sandbox
// sees them and the session's CA, and binds it at CABundlePath and over
// every system bundle file of the sandbox's view.
func (g *wayOut) bundle(cfg *sandbox.Config) error {
	dir, err := os.MkdirTemp("", "airlock-ca-")
	if err != nil {
		return fmt.Errorf("egress: the CA bundle's directory: %w", err)
	}
	g.dir = dir
	// The sandbox's init opens the file with the sandbox's uid: the
	// directory must let it through. What it holds is public (roots and a
	// CA certificate).
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("egress: the CA bundle's directory: %w", err)
	}
	var system []byte
	var over []string
	for _, p := range systemBundles {
		host, ok := inView(p, cfg.Root, cfg.ReadOnly)
		if !ok {
			continue
		}
		if system == nil {
			if b, err := os.ReadFile(host); err == nil {
				system = b
			}
		}
		over = append(over, p)
	}
	file := filepath.Join(dir, "ca-bundle.pem")
	if err := os.WriteFile(file, g.ca.Bundle(system), 0o444); err != nil {
		return fmt.Errorf("egress: the CA bundle: %w", err)
	}
	cfg.Binds = append(slices.Clip(cfg.Binds), sandbox.Bind{Host: file, Inside: CABundlePath})
	for _, p := range over {
		cfg.Binds = append(cfg.Binds, sandbox.Bind{Host: file, Inside: p})
	}
	for _, v := range caBundleVars {
		g.env = append(g.env, v+"="+CABundlePath)
	}
	return nil
}

// inView reports whether p, a system path, is a regular file the sandbox
// sees at p with no symbolic link on the way (a bind lands on it), and
// its host path: under the image root, or under one of the read-only
// trees of the host's.
func inView(p, rootfs string, readOnly []string) (string, bool) {
	host := p
	if rootfs != "" {
		host = filepath.Join(rootfs, p)
	} else if !slices.ContainsFunc(readOnly, func(d string) bool { return d == "/" || strings.HasPrefix(p, d+"/") }) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(host)
	if err != nil || real != host {
		return "", false
	}
	st, err := os.Lstat(host)
	return host, err == nil && st.Mode().IsRegular()
}

// Env returns the variables every command of the sandbox gets for its
// way out: the bundle's and the credentials' placeholders. (The
// credentials' files are among the files no sandbox sees.)
func (g *wayOut) Env() []string { return g.env }

// Bound removes what the way out left on the host for the sandbox to
// bind: once the sandbox has started, its mount holds the bundle.
func (g *wayOut) Bound() {
	if g.dir != "" {
		os.RemoveAll(g.dir)
		g.dir = ""
	}
}

// Serve starts the proxy on lis, the listener inside the sandbox's
// network namespace, recording every decision, refusal and connection's
// end through rec before the connection it allows. Nothing the sandbox
// does grows airlock's own process without bound: its connections are
// counted against openFiles.
func (g *wayOut) Serve(lis net.Listener, openFiles int, rec EgressRecorder) error {
	cfg := g.config(rec.proxyRecord())
	cfg.Limits = proxy.SandboxLimits(openFiles)
	var px proxyServer
	var err error
	if g.token == "" {
		px, err = proxy.New(cfg)
	} else {
		// A gateway of one client, the sandbox: a request without its
		// token is refused (407, or SOCKS5's authentication failure) and
		// recorded before any decision, and the token is never forwarded
		// nor recorded (its fingerprint is).
		px, err = proxy.NewGateway(proxy.GatewayConfig{
			Clients: []proxy.Client{{Name: proxyUser, Task: g.task, TokenSHA256: sha256.Sum256([]byte(g.token))}},
			Proxy:   func(proxy.Client) (proxy.Config, error) { return cfg, nil },
			Limits:  cfg.Limits, Record: cfg.Record,
		})
	}
	if err != nil {
		return err
	}
	g.px = px
	go func() { _ = px.Serve(lis) }()
	return nil
}

// proxyServer is a proxy, or a gateway in front of one.
type proxyServer interface {
	Serve(net.Listener) error
	ResetStep()
	Shutdown(context.Context) error
	Close() error
}

// proxyUser is the user name of the sandbox's requests to a proxy that
// requires its token.
const proxyUser = "airlock"

// EgressRecorder is how a way out records (wayOut.Serve): each event of
// its proxy becomes an audit record over Context's context (the run, the
// session, the step running now), which Record writes before the
// connection it allows (lazily when lazy: a connection's end, which
// nothing waits on); an error refuses the connection. Blocked, when not
// nil, is told of every always-blocked destination refused (cloud
// metadata, link-local), with the record's context and the reason: an
// attempt on the host's credentials.
type EgressRecorder struct {
	Context func() audit.Context
	Record  func(ev audit.Event, lazy bool) error
	Blocked func(ctx audit.Context, why string)
}

// proxyRecord is rec as the proxy's callback.
func (rec EgressRecorder) proxyRecord() func(proxy.Event) error {
	return func(ev proxy.Event) error {
		ctx := rec.Context()
		err := rec.Record(proxy.AuditEvent(ev, ctx), ev.Stage == proxy.StageClosed)
		if rec.Blocked != nil && alwaysBlocked(ev) {
			rec.Blocked(ctx, ev.Decision.Why())
		}
		if err != nil {
			return errNotRecorded
		}
		return nil
	}
}

// alwaysBlocked reports whether ev is a refused request for an
// always-blocked destination (cloud metadata, link-local, or the
// policy's own alwaysBlocked entries): the egress gate's fixed reasons
// for those say `host "H" is always blocked:` (egress/reasons.go).
func alwaysBlocked(ev proxy.Event) bool {
	return ev.Stage == proxy.StageDecided && ev.Decision.Gate == decision.GateEgress &&
		!ev.Decision.Allowed() && strings.Contains(ev.Decision.Why(), " is always blocked: ")
}

// config is the proxy of g's task, for every entry point: the gate, the
// CA, the credentials, the budgets and the record of every decision.
func (g *wayOut) config(record func(proxy.Event) error) proxy.Config {
	return proxy.Config{
		Task:        g.task,
		Gate:        g.e.egress,
		Resolver:    g.e.opts.Resolver,
		Dialer:      g.e.opts.Dialer,
		Record:      record,
		CA:          g.ca,
		Credentials: g.creds,
		Budgets:     g.budgets,
	}
}

// ResetStep starts the task's budget over: it holds per command.
func (g *wayOut) ResetStep() {
	if g.px != nil {
		g.px.ResetStep()
	}
}

// Close stops the proxy, giving open tunnels a second to finish before
// they are cut, so that nothing of it outlives its sandbox, and removes
// what is left on the host. It does so once; a later call waits for the
// first.
func (g *wayOut) Close() {
	g.stop.Do(func() {
		g.Bound()
		if g.px == nil {
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = g.px.Shutdown(sctx)
		_ = g.px.Close()
	})
}

// credentials reads the values of the credentials task may use (those
// for a host an inspected entry of task reaches), from airlock's own
// environment or files, and makes their placeholders: it returns them
// with the variables that set the placeholders inside the sandbox. An
// error names the credential and where its value should be, never a
// value.
func credentials(pol *policy.Loaded, g *egress.Gate, task string) (creds []proxy.Credential, env []string, err error) {
	for _, c := range credentialsFor(pol, g, task) {
		v, err := credentialValue(c)
		if err != nil {
			return nil, nil, fmt.Errorf("egress: credential %q: %w", c.Name, err)
		}
		pc := proxy.Credential{Name: c.Name, Header: "Authorization", Placeholder: placeholder(c.Name)}
		switch c.Scheme {
		case "bearer":
			pc.Value = "Bearer " + v
		case "basic":
			pc.Value = "Basic " + base64.StdEncoding.EncodeToString([]byte(c.Username+":"+v))
		default:
			pc.Header, pc.Value = c.Header, v
		}
		creds = append(creds, pc)
		if c.SandboxEnv != "" {
			env = append(env, c.SandboxEnv+"="+pc.Placeholder)
		}
	}
	return creds, env, nil
}

// credentialsFor lists the credentials task may use: those for it (or
// for every task) whose host an inspected entry of task reaches.
func credentialsFor(pol *policy.Loaded, g *egress.Gate, task string) []policy.Credential {
	if pol.Egress == nil {
		return nil
	}
	var out []policy.Credential
	for _, c := range pol.Egress.Credentials {
		if (len(c.Tasks) == 0 || slices.Contains(c.Tasks, task)) && inspects(g, task, c.Host) {
			out = append(out, c)
		}
	}
	return out
}

// inspects reports whether an inspected entry of task reaches host
// ("name" or "name:port"): only then is a credential for it used.
func inspects(g *egress.Gate, task, host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = strings.Trim(h, "[]")
	}
	for _, inspected := range g.Reaches(task, host) {
		if inspected {
			return true
		}
	}
	return false
}

// maxCredential bounds a credential file.
const maxCredential = 64 << 10

// credentialValue reads a credential's value: the variable, or the file
// (regular, opened without blocking) with its trailing white space cut.
func credentialValue(c policy.Credential) (string, error) {
	if c.FromEnv != "" {
		v, ok := os.LookupEnv(c.FromEnv)
		if !ok || v == "" {
			return "", fmt.Errorf("$%s is not set in airlock's environment", c.FromEnv)
		}
		return v, nil
	}
	f, _, err := hostfile.Open(c.FromFile)
	if err != nil {
		return "", fmt.Errorf("reading its file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCredential+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", c.FromFile, err)
	case len(b) > maxCredential:
		return "", fmt.Errorf("%s is larger than %d bytes", c.FromFile, maxCredential)
	}
	v := strings.TrimRight(string(b), " \t\r\n")
	if v == "" || strings.ContainsAny(v, "\r\n\x00") {
		return "", errors.New(path.Base(c.FromFile) + " is empty or holds more than one line")
	}
	return v, nil
}

// placeholder is a fresh, unguessable stand-in for a credential.
func placeholder(name string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "airlock-placeholder-" + name + "-" + hex.EncodeToString(b[:])
}

// budgetsFor turns the policy's budgets for task (per command: each run,
// each step of a session) and, for a session, the session's, into the
// proxy's.
func budgetsFor(pol *policy.Loaded, task string, session bool) []proxy.Budget {
	var out []proxy.Budget
	if pol.Egress != nil {
		if b, ok := pol.Egress.Budgets[task]; ok {
			out = append(out, proxyBudget("task "+task, b, true))
		}
	}
	if session && pol.Session != nil && pol.Session.Egress != nil {
		out = append(out, proxyBudget("session", *pol.Session.Egress, false))
	}
	return out
}

func proxyBudget(name string, b policy.Budget, perStep bool) proxy.Budget {
	pb := proxy.Budget{Name: name, PerStep: perStep, All: limitsOf(b.Limits())}
	for h, l := range b.Hosts {
		if pb.Hosts == nil {
			pb.Hosts = map[string]proxy.BudgetLimits{}
		}
		pb.Hosts[h] = limitsOf(l)
	}
	return pb
}

func limitsOf(l policy.BudgetLimits) proxy.BudgetLimits {
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return proxy.BudgetLimits{BytesOut: v(l.BytesOut), BytesIn: v(l.BytesIn), Requests: v(l.Requests),
		Connections: v(l.Connections), Concurrent: v(l.ConcurrentConnections)}
}
