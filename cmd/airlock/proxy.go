package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/linelog"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
)

// proxyDialer and proxyResolver replace the proxy's dialer and resolver
// in tests (nil: a net.Dialer, the system's resolver).
var (
	proxyDialer   proxy.Dialer
	proxyResolver proxy.Resolver
)

// proxyOptions are the flags of "airlock proxy".
type proxyOptions struct {
	task, listen, audit, caCert, netns, gateway, metrics string
	allowRemote, metricsAllowRemote                      bool
}

func newProxyCmd() *cobra.Command {
	var o proxyOptions
	cmd := &cobra.Command{
		Use:   "proxy (--task K | --gateway FILE) --listen ADDR [--audit FILE] [--metrics ADDR]",
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

With --gateway FILE (instead of --task) the proxy is shared by many
sandboxes: FILE lists its clients, each a name, a task and the SHA-256 of
its token (airlock proxy token mints one). A client sends its name and
token as the proxy's user and password (HTTP_PROXY=http://NAME:TOKEN@host:port,
or SOCKS5 username/password) on every request and reaches only what its
own task allows; a request without them, or with a wrong one, is refused
with 407 (SOCKS5: authentication failure) and recorded. FILE is held to
the rules of a policy file: only you or root may have written it.

--metrics ADDR serves Prometheus metrics at http://ADDR/metrics, on a
listener of its own (loopback unless --metrics-allow-remote; with
--netns, in this process's network namespace, not the clients').

SIGINT or SIGTERM stops the proxy: it accepts nothing new and gives open
tunnels 10 seconds to finish.`,
		Example: `  airlock proxy --task web_search --listen 127.0.0.1:3128
  curl -x http://127.0.0.1:3128 https://search.example-corp.net/
  curl --socks5-hostname 127.0.0.1:3128 https://search.example-corp.net/
  airlock proxy --gateway clients.yaml --listen 127.0.0.1:3128 --metrics 127.0.0.1:9128
  curl -x http://sandbox-a:$TOKEN@127.0.0.1:3128 https://search.example-corp.net/`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) > 0:
				return usageError{fmt.Errorf("proxy: unexpected argument %q", args[0])}
			case o.task == "" && o.gateway == "":
				return usageError{errors.New("proxy: --task is required (the task whose allowlist applies), or --gateway FILE (clients bound to tasks)")}
			case o.task != "" && o.gateway != "":
				return usageError{errors.New("proxy: --task and --gateway exclude each other (a gateway's clients name their tasks)")}
			case o.listen == "":
				return usageError{errors.New("proxy: --listen is required, e.g. --listen 127.0.0.1:3128")}
			case o.metrics != "" && o.metrics == o.listen && !strings.HasSuffix(o.listen, ":0"):
				return usageError{errors.New("proxy: --metrics must not be the clients' --listen address")}
			}
			if err := checkListen("--listen", o.listen, o.allowRemote, "--allow-remote", "use the proxy"); err != nil {
				return err
			}
			if o.metrics != "" {
				return checkListen("--metrics", o.metrics, o.metricsAllowRemote, "--metrics-allow-remote", "read what its clients do")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			serverGC()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			// A closed stderr fails the decision lines' writes (linelog
			// counts them) rather than killing the proxy by SIGPIPE, as
			// airlock mcp's does.
			signal.Ignore(syscall.SIGPIPE)
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
	f.StringVar(&o.gateway, "gateway", "", "serve the clients FILE lists, each bound to its task by its token (instead of --task)")
	f.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (host:port, loopback)")
	f.BoolVar(&o.metricsAllowRemote, "metrics-allow-remote", false, "let --metrics be an address other hosts can reach")
	f.StringVar(&o.caCert, "ca-cert", "", "write the certificate of the CA of inspected hosts to FILE (PEM), for clients to trust")
	policyflag.Add(cmd)
	cmd.AddCommand(newProxyTokenCmd())
	return cmd
}

// runProxy serves until ctx is done, then shuts down gracefully: the
// proxy is enforcer's (enforcer.NewProxy), this only reads the flags and
// prints.
func runProxy(ctx context.Context, cmd *cobra.Command, o proxyOptions) error {
	pol, err := loadPolicy(cmd)
	if err != nil {
		return err
	}
	if o.task != "" {
		if err := checkTask(pol.EgressConfig().TaskAllowlist, o.task); err != nil {
			return err
		}
	}
	// Lines on stderr never wait for a reader: a full pipe drops lines
	// (counted) rather than stopping the proxy; the audit log is the record.
	stderr := linelog.New(cmd.ErrOrStderr())
	defer stderr.Close(time.Second)
	req := enforcer.ProxyRequest{Task: o.task, Gateway: o.gateway, Listen: o.listen, Netns: o.netns, Metrics: o.metrics, CACert: o.caCert,
		OnEvent:       func(ev proxy.Event) { printProxyEvent(stderr, ev) },
		OnRecordError: func(err error) { printAuditError(stderr, err.Error()) },
		Notice:        func(line string) { stderr.Printf("airlock: %s", line) },
	}
	if o.gateway != "" {
		if req.Clients, err = loadGatewayFile(o.gateway, pol.EgressConfig().TaskAllowlist); err != nil {
			return err
		}
	}
	// Every task's credentials are read before the log is opened: a
	// missing one fails with nothing recorded.
	px, err := enforcer.NewProxy(pol, req, enforcer.Options{Dialer: proxyDialer, Resolver: proxyResolver, OnEvent: func(ev audit.Event) {
		if ev.Kind == audit.KindBehavioral {
			stderr.Printf("airlock: monitor: alert: %s", ev.Reason)
		}
	}})
	if err != nil {
		return err
	}
	path, err := auditPath(o.audit)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	log, err := audit.Open(path, audit.WithHook(monitor.New(monitor.ThresholdsFor(pol.Policy))))
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer func() {
		// Close syncs the connections' lazy end records: a failure loses them.
		if err := log.Close(); err != nil {
			printAuditError(stderr, "closing the log: "+err.Error())
		}
	}()
	return px.Serve(ctx, log)
}

// printProxyEvent prints one line per decision and refusal, and one per
// allowed connection that then failed. The line writer escapes what the
// client chose.
func printProxyEvent(w *linelog.Writer, ev proxy.Event) {
	from := ev.Client
	if ev.Identity != "" {
		from = "client " + ev.Identity + " at " + ev.Client
	}
	switch {
	case ev.Stage == proxy.StageDecided, ev.Stage == proxy.StageRejected, ev.Stage == proxy.StageRefused, ev.Stage == proxy.StageBudget:
		w.Printf("airlock: %s (%s from %s)", ev.Decision, ev.Protocol, from)
	case ev.Err != nil:
		w.Printf("airlock: egress: error: %s (%s from %s)", proxy.AuditEvent(ev, audit.Context{}).Reason, ev.Protocol, from)
	}
}

// checkListen refuses a listen address (of flag) that is not loopback
// unless allowRemote (flag override says so): an open proxy lends this
// host's network to whoever reaches it, and its metrics tell what its
// clients do. A name other than localhost is not resolved here: it is
// refused too.
func checkListen(flag, listen string, allowRemote bool, override, could string) error {
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
	return usageError{fmt.Errorf("proxy: %s %s: %s, so other hosts could %s: "+
		"listen on 127.0.0.1 (or [::1], localhost), or give %s", flag, listen, what, could, override)}
}

// checkTask refuses a --task the policy has no allowlist for: the proxy
// would refuse every destination, which is never what was meant.
func checkTask(allowlists map[string][]string, task string) error {
	hint := policy.TaskHint(allowlists, task)
	if hint == "" {
		return nil
	}
	return usageError{fmt.Errorf("proxy: --task %q: the policy has no allowlist for it, so every destination would be refused; %s "+
		"(add the task to egress.taskAllowlist, with [] to refuse everything)", task, hint)}
}
