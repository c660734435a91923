package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/linelog"
	"github.com/airlock-sandbox/airlock/internal/netns"
	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/proxy"
)

// errNotRecorded is what a client is told of a connection refused because
// its decision could not be recorded.
var errNotRecorded = errors.New("the audit log could not record it")

// proxyGrace is how long a stopping proxy lets open tunnels finish.
const proxyGrace = 10 * time.Second

// proxyCALife is how long the CA of airlock proxy's inspected hosts is
// valid: a proxy is restarted (and gets a new CA) before that.
const proxyCALife = 90 * 24 * time.Hour

// proxyDialer and proxyResolver replace the proxy's dialer and resolver
// in tests (nil: a net.Dialer, the system's resolver).
var (
	proxyDialer   proxy.Dialer
	proxyResolver proxy.Resolver
)

// proxyOptions are the flags of "airlock proxy".
type proxyOptions struct {
	task, listen, audit, caCert, netns string
	allowRemote                        bool
}

func newProxyCmd() *cobra.Command {
	var o proxyOptions
	cmd := &cobra.Command{
		Use:   "proxy --task K --listen ADDR [--audit FILE]",
		Short: "Run the egress proxy on its own, in front of containers and CI jobs",
		Long: `proxy serves HTTP proxy requests (CONNECT and absolute-form URLs) and SOCKS5
on one address, and lets clients reach only what the policy allows the task:
names are resolved once, every address is checked, and the proxy connects to
an address it checked. Cloud metadata endpoints are refused in every spelling.

A refusal is HTTP 403 with the reason in the body and in X-Airlock-Reason, or
SOCKS5 reply 2. Every decision is recorded in the audit log (--audit FILE,
else $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl) before the
connection it allows is made, and printed as one line on stderr.

A task with inspected hosts gets a CA made in memory for the proxy's life
(its key never leaves the process); --ca-cert FILE writes its certificate,
which clients must trust. Credentials are read from this process's
environment or files, and added to the requests they are for.

--task must name a task of the policy's egress.taskAllowlist (a task it
lacks would refuse every destination). --listen must be a loopback address
(127.0.0.1:3128, [::1]:3128, localhost:3128) unless --allow-remote says
that clients on other hosts may use the proxy: anything that reaches the
address can then reach what the task allows, as this host.

With --netns PATH the proxy listens inside the network namespace at PATH
(as "ip netns add" makes one) and connects out from its own: a container
placed in that namespace has the proxy as its only way out (see
airlock export podman).

SIGINT or SIGTERM stops the proxy: it accepts nothing new and gives open
tunnels 10 seconds to finish.`,
		Example: `  airlock proxy --task web_search --listen 127.0.0.1:3128
  curl -x http://127.0.0.1:3128 https://search.example-corp.net/
  curl --socks5-hostname 127.0.0.1:3128 https://search.example-corp.net/`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) > 0:
				return usageError{fmt.Errorf("proxy: unexpected argument %q", args[0])}
			case o.task == "":
				return usageError{errors.New("proxy: --task is required (the task whose allowlist applies)")}
			case o.listen == "":
				return usageError{errors.New("proxy: --listen is required, e.g. --listen 127.0.0.1:3128")}
			}
			return checkListen(o.listen, o.allowRemote)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runProxy(ctx, cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.task, "task", "", "task whose egress allowlist applies")
	f.StringVar(&o.listen, "listen", "", "address to serve HTTP and SOCKS5 on (host:port; port 0 picks one)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "let --listen be an address other hosts can reach (not loopback)")
	f.StringVar(&o.netns, "netns", "", "listen inside the network namespace at this path (root only)")
	f.StringVar(&o.audit, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	f.StringVar(&o.caCert, "ca-cert", "", "write the certificate of the CA of inspected hosts to FILE (PEM), for clients to trust")
	policyFlag(cmd)
	return cmd
}

// runProxy serves until ctx is done, then shuts down gracefully.
func runProxy(ctx context.Context, cmd *cobra.Command, o proxyOptions) error {
	pol, err := loadPolicy(cmd)
	if err != nil {
		return err
	}
	if err := checkTask(pol.EgressConfig().TaskAllowlist, o.task); err != nil {
		return err
	}
	gate, err := egress.Compile(pol.EgressConfig())
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	creds, budgets, err := enforcer.ProxyEgress(pol, gate, o.task)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	// Lines on stderr never wait for a reader: a full pipe drops lines
	// (counted) rather than stopping the proxy; the audit log is the record.
	stderr := linelog.New(cmd.ErrOrStderr())
	defer stderr.Close(time.Second)
	path := o.audit
	if path == "" {
		if path, err = audit.DefaultPath(); err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
	}
	rec, err := monitor.Open(path, monitor.ThresholdsFor(pol.Policy), func(a audit.Event) {
		stderr.Printf("airlock: monitor: alert: %s", a.Reason)
	})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer func() {
		// Close syncs the connections' lazy end records: a failure loses them.
		if err := rec.Close(); err != nil {
			printAuditError(stderr, "closing the log: "+err.Error())
		}
	}()
	var ca *proxy.CA
	if gate.Inspects(o.task) {
		if ca, err = proxy.NewCA("airlock proxy CA, task "+o.task, proxyCALife); err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		if o.caCert != "" {
			if err := hostfile.WriteFile(o.caCert, ca.CertPEM(), 0o644); err != nil {
				return fmt.Errorf("proxy: --ca-cert: %w", err)
			}
			stderr.Printf("airlock: proxy: task %q inspects hosts: clients must trust the CA in %s", o.task, o.caCert)
		} else {
			stderr.Printf("airlock: proxy: task %q inspects hosts: clients must trust its CA (write it with --ca-cert FILE)", o.task)
		}
	}
	px, err := proxy.New(proxy.Config{
		CA:          ca,
		Credentials: creds,
		Budgets:     budgets,
		Task:        o.task,
		Gate:        gate,
		Dialer:      proxyDialer,
		Resolver:    proxyResolver,
		Record: func(ev proxy.Event) error {
			printProxyEvent(stderr, ev)
			record := rec.Record
			if ev.Stage == proxy.StageClosed {
				record = rec.RecordLazy // nothing waits on a connection's end
			}
			a := proxy.AuditEvent(ev, audit.Context{})
			if _, _, err := record(a); err != nil {
				// The proxy refuses an allowed connection it cannot record;
				// the client is told that much, the operator why.
				printAuditError(stderr, audit.NotWritten(a, err).Error())
				return errNotRecorded
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	// No TCP keep-alive on client connections: the proxy's idle timeout
	// cuts idle ones (see proxy.Limits).
	var ln net.Listener
	if o.netns != "" {
		ln, err = netns.Listen(ctx, o.netns, "tcp", o.listen)
	} else {
		ln, err = (&net.ListenConfig{KeepAlive: -1}).Listen(ctx, "tcp", o.listen)
	}
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	where := ln.Addr().String()
	if o.netns != "" {
		where += " in the network namespace " + o.netns
	}
	stderr.Printf("airlock: proxy: task %q: serving HTTP and SOCKS5 on %s", o.task, where)
	served := make(chan error, 1)
	go func() { served <- px.Serve(ln) }()
	select {
	case err := <-served:
		px.Close()
		return fmt.Errorf("proxy: %w", err)
	case <-ctx.Done():
	}
	stderr.Printf("airlock: proxy: stopping: open tunnels have %s to finish", proxyGrace)
	sctx, cancel := context.WithTimeout(context.Background(), proxyGrace)
	defer cancel()
	if err := px.Shutdown(sctx); err != nil {
		stderr.Printf("airlock: proxy: closing the tunnels still open: %v", err)
	}
	px.Close()
	<-served
	return nil
}

// printProxyEvent prints one line per decision and refusal, and one per
// allowed connection that then failed. The line writer escapes what the
// client chose.
func printProxyEvent(w *linelog.Writer, ev proxy.Event) {
	switch {
	case ev.Stage == proxy.StageDecided, ev.Stage == proxy.StageRejected, ev.Stage == proxy.StageRefused, ev.Stage == proxy.StageBudget:
		w.Printf("airlock: %s (%s from %s)", ev.Decision, ev.Protocol, ev.Client)
	case ev.Err != nil:
		w.Printf("airlock: egress: error: %s (%s from %s)", proxy.AuditEvent(ev, audit.Context{}).Reason, ev.Protocol, ev.Client)
	}
}

// checkListen refuses a --listen address that is not loopback unless
// allowRemote: an open proxy lends this host's network to whoever reaches
// it. A name other than localhost is not resolved here: it is refused too.
func checkListen(listen string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || allowRemote {
		return nil // Listen says what is wrong with it
	}
	if ip, err := netip.ParseAddr(host); (err == nil && ip.Unmap().IsLoopback()) || strings.EqualFold(host, "localhost") {
		return nil
	}
	what := fmt.Sprintf("%q is not a loopback address", host)
	if host == "" {
		what = "no host means every address of this host"
	}
	return usageError{fmt.Errorf("proxy: --listen %s: %s, so other hosts could use the proxy: "+
		"listen on 127.0.0.1 (or [::1], localhost), or give --allow-remote", listen, what)}
}

// checkTask refuses a --task the policy has no allowlist for: the proxy
// would refuse every destination, which is never what was meant.
func checkTask(allowlists map[string][]string, task string) error {
	if _, ok := allowlists[task]; ok {
		return nil
	}
	tasks := slices.Sorted(maps.Keys(allowlists))
	hint := "the policy has no egress.taskAllowlist"
	if len(tasks) > 0 {
		hint = "its tasks: " + strings.Join(tasks, ", ")
	}
	if best := strict.Closest(task, tasks); best != "" {
		hint = fmt.Sprintf("did you mean %q? (%s)", best, hint)
	}
	return usageError{fmt.Errorf("proxy: --task %q: the policy has no allowlist for it, so every destination would be refused; %s "+
		"(add the task to egress.taskAllowlist, with [] to refuse everything)", task, hint)}
}
