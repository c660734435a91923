package enforcer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/netns"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
)

// proxyCALife is how long the CA of a standalone proxy's inspected hosts
// is valid: a proxy is restarted (and gets a new CA) before that.
const proxyCALife = 90 * 24 * time.Hour

// ProxyGrace is how long a stopping standalone proxy lets open tunnels
// finish.
const ProxyGrace = 10 * time.Second

// ProxyRequest is what `airlock proxy` serves: the egress proxy on its
// own, in front of containers and CI jobs, for one task or for a shared
// gateway's clients (docs/egress.md).
type ProxyRequest struct {
	// Task is the task whose allowlist applies; Clients, instead, are a
	// shared gateway's, each bound to its task by its token, and Gateway
	// names the file they came from.
	Task    string
	Clients []proxy.Client
	Gateway string
	// Listen is the clients' address; Netns, when set, the path of the
	// network namespace in which it listens (the proxy connects out from
	// its own).
	Listen, Netns string
	// Metrics, when set, is the address of a listener of its own, in this
	// process's network namespace, serving Prometheus metrics at /metrics.
	Metrics string
	// CACert, when set, receives the certificate of the CA of inspected
	// hosts (PEM), for clients to trust.
	CACert string
	// OnEvent, when not nil, is called with every event of the proxy
	// before it is recorded: the command line prints a line for each.
	OnEvent func(proxy.Event)
	// OnRecordError, when not nil, is called with every record the audit
	// log refused; the connection it would have allowed is refused.
	OnRecordError func(error)
	// Notice, when not nil, receives the proxy's own lines: where it
	// serves, what its clients must trust, its stop.
	Notice func(string)
}

// StandaloneProxy is `airlock proxy` ready to serve (NewProxy): each
// task's way out, as every entry point's: the gate, the
// credentials' values, the task's budget for the proxy's life (a
// gateway's clients each their own), and a CA for the proxy's life when a
// task inspects a host.
type StandaloneProxy struct {
	e     *Enforcer
	req   ProxyRequest
	ca    *proxy.CA
	what  string
	tasks map[string]*wayOut
}

// NewProxy prepares req's proxy under pol: every task's credentials are
// read now, before any log is opened, so that a missing one fails with
// nothing recorded. opts gives the resolver, the dialer and the upstream
// roots, and OnEvent, which is called with every record and with the
// alerts the log's monitor hook writes after them.
func NewProxy(pol *policy.Loaded, req ProxyRequest, opts Options) (*StandaloneProxy, error) {
	gate, err := egress.Compile(pol.EgressConfig())
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &StandaloneProxy{e: &Enforcer{pol: pol, egress: gate, opts: opts}, req: req, tasks: map[string]*wayOut{},
		what: fmt.Sprintf("task %q", req.Task)}
	tasks := []string{req.Task}
	if req.Clients != nil {
		tasks, p.what = nil, fmt.Sprintf("gateway %s (%d clients)", req.Gateway, len(req.Clients))
		for _, c := range req.Clients {
			if !slices.Contains(tasks, c.Task) {
				tasks = append(tasks, c.Task)
			}
		}
	}
	for _, task := range tasks {
		if p.tasks[task], err = p.e.newEgress(task, false); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	// A plain listener serves every local process that reaches it: one
	// that adds credentials would lend them to any of them. A gateway's
	// clients authenticate; a namespace's listener is its own.
	if req.Clients == nil && req.Netns == "" && len(p.tasks[req.Task].creds) > 0 {
		return nil, fmt.Errorf("proxy: task %q adds credentials to its requests, and a listener of its own would lend them to every local process that reaches it: "+
			"serve it with --gateway FILE (each client authenticates with its token) or --netns PATH (a network namespace's own listener)", req.Task)
	}
	if slices.ContainsFunc(tasks, gate.Inspects) {
		if p.ca, err = proxy.NewCA("airlock proxy CA, "+p.what, proxyCALife); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		for _, g := range p.tasks {
			g.ca = p.ca
		}
	}
	return p, nil
}

// Serve serves until ctx is done, recording every decision in log before
// the connection it allows, then stops: it accepts nothing new and gives
// open tunnels ProxyGrace to finish.
func (p *StandaloneProxy) Serve(ctx context.Context, log *audit.Log) error {
	p.e.log = log
	sc := p.e.newScribe(nil)
	sc.refused = p.req.OnRecordError
	recorded := sc.egressRecorder(audit.Context{}).proxyRecord()
	record := func(ev proxy.Event) error {
		if p.req.OnEvent != nil {
			p.req.OnEvent(ev)
		}
		return recorded(ev)
	}
	var metrics *proxy.Metrics
	if p.req.Metrics != "" {
		metrics = proxy.NewMetrics()
	}
	if err := p.writeCA(); err != nil {
		return err
	}
	config := func(task string) proxy.Config {
		cfg := p.tasks[task].config(record)
		cfg.Metrics = metrics
		return cfg
	}
	var px proxyServer
	var err error
	if p.req.Clients != nil {
		px, err = proxy.NewGateway(proxy.GatewayConfig{
			Clients: p.req.Clients,
			Proxy:   func(c proxy.Client) (proxy.Config, error) { return config(c.Task), nil },
			Record:  record,
			Metrics: metrics,
		})
	} else {
		px, err = proxy.New(config(p.req.Task))
	}
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	// No TCP keep-alive on client connections: the proxy's idle timeout
	// cuts idle ones (see proxy.Limits).
	var ln net.Listener
	if p.req.Netns != "" {
		ln, err = netns.Listen(ctx, p.req.Netns, "tcp", p.req.Listen)
	} else {
		ln, err = (&net.ListenConfig{KeepAlive: -1}).Listen(ctx, "tcp", p.req.Listen)
	}
	if err != nil {
		px.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	if metrics != nil {
		stop, err := p.serveMetrics(ctx, metrics)
		if err != nil {
			ln.Close()
			px.Close()
			return err
		}
		defer stop()
	}
	where := ln.Addr().String()
	if p.req.Netns != "" {
		where += " in the network namespace " + p.req.Netns
	}
	p.notice(fmt.Sprintf("proxy: %s: serving HTTP and SOCKS5 on %s", p.what, where))
	served := make(chan error, 1)
	go func() { served <- px.Serve(ln) }()
	select {
	case err := <-served:
		px.Close()
		return fmt.Errorf("proxy: %w", err)
	case <-ctx.Done():
	}
	p.notice(fmt.Sprintf("proxy: stopping: open tunnels have %s to finish", ProxyGrace))
	sctx, cancel := context.WithTimeout(context.Background(), ProxyGrace)
	defer cancel()
	if err := px.Shutdown(sctx); err != nil {
		p.notice(fmt.Sprintf("proxy: closing the tunnels still open: %v", err))
	}
	px.Close()
	<-served
	return nil
}

// writeCA writes the CA's certificate to CACert when there is a CA, and
// says what clients must trust.
func (p *StandaloneProxy) writeCA() error {
	switch {
	case p.ca == nil:
		return nil
	case p.req.CACert == "":
		p.notice(fmt.Sprintf("proxy: %s inspects hosts: clients must trust its CA (write it with --ca-cert FILE)", p.what))
		return nil
	}
	if err := hostfile.WriteFile(p.req.CACert, p.ca.CertPEM(), 0o644); err != nil {
		return fmt.Errorf("proxy: --ca-cert: %w", err)
	}
	p.notice(fmt.Sprintf("proxy: %s inspects hosts: clients must trust the CA in %s", p.what, p.req.CACert))
	return nil
}

// serveMetrics serves m at http://Metrics/metrics until the returned
// stop is called or ctx is done.
func (p *StandaloneProxy) serveMetrics(ctx context.Context, m *proxy.Metrics) (stop func(), err error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", p.req.Metrics)
	if err != nil {
		return nil, fmt.Errorf("proxy: --metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
	go func() { _ = srv.Serve(ln) }()
	p.notice(fmt.Sprintf("proxy: metrics at http://%s/metrics", ln.Addr()))
	return func() { srv.Close() }, nil
}

func (p *StandaloneProxy) notice(line string) {
	if p.req.Notice != nil {
		p.req.Notice(line)
	}
}
