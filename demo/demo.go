package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// PayloadTool is the tool the demo adds to the default policy: it may run
// only airlock's own binary, as a payload, inside the sandbox.
const PayloadTool = "agent_code"

// EgressTask is the task whose allowlist the payload's network attempts
// are decided against: the default policy's web_search.
const EgressTask = "web_search"

// Options configure a demo run.
type Options struct {
	// AuditPath is the audit file; "" means a temporary one, removed
	// unless Keep is set.
	AuditPath string
	// Keep keeps the temporary audit file.
	Keep bool
	// Offline makes the egress proxy resolve nothing and dial nothing off
	// the host, so that the demo sends no traffic at all (tests use it).
	Offline bool
	// OnStart, when not nil, is called as each attempt starts, with its
	// number (from 1), the number of attempts and its name; the slow
	// ones start alongside the rest, so calls may come from several
	// goroutines (one at a time).
	OnStart func(step, of int, name string)
}

// Attempt is one row of the demo's table.
type Attempt struct {
	Step      int    `json:"step"`
	Attempt   string `json:"attempt"`
	Gate      string `json:"gate"`
	Decision  string `json:"decision"`
	Reason    string `json:"reason"`
	Contained bool   `json:"contained"`
	// Evidence says how containment was checked.
	Evidence string `json:"evidence"`
}

// Report is the outcome of a demo run.
type Report struct {
	Attempts  []Attempt     `json:"attempts"`
	Contained bool          `json:"contained"`
	AuditPath string        `json:"auditPath"`
	Alerts    []audit.Event `json:"alerts"`
}

// Run plays every attempt and reports how each was contained: on Linux
// with the Linux payloads, on macOS with the Mac's (macAttempts); other
// systems have no sandbox, and it refuses.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		return nil, errors.New("demo: no sandbox on this system (Linux and macOS have one)")
	}
	pol, err := demoPolicy()
	if err != nil {
		return nil, err
	}
	auditPath, cleanup, err := auditFile(opts)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	th := monitor.ThresholdsFor(pol.Policy)
	log, err := audit.Open(auditPath, audit.WithHook(monitor.New(th)))
	if err != nil {
		return nil, err
	}
	defer log.Close()

	r := &runner{events: map[string][]audit.Event{}, onStart: opts.OnStart}
	eopts := enforcer.Options{
		Binds:   []sandbox.Bind{selfBind()},
		OnEvent: r.observe,
	}
	if opts.Offline {
		eopts.Resolver, eopts.Dialer = offlineResolver{}, offlineDialer()
	}
	r.enf, err = enforcer.New(pol, log, eopts)
	if err != nil {
		return nil, err
	}
	secret, err := plantSecret()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Dir(secret))
	canary, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer canary.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer udp.Close()
	var udpGot atomic.Int64
	go func() { // an echo server: a datagram that reaches it is an escape
		buf := make([]byte, 512)
		for {
			n, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			udpGot.Add(1)
			_, _ = udp.WriteTo(buf[:n], from)
		}
	}()

	rep := &Report{AuditPath: auditPath, Contained: true}
	if opts.AuditPath == "" && !opts.Keep {
		rep.AuditPath = ""
	}
	script := attempts(secret, canary.Addr().String(), udp.LocalAddr().String())
	if runtime.GOOS == "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		script = macAttempts(secret, canary.Addr().String(), home)
	}
	for i, a := range r.play(ctx, script) {
		a.Step = i + 1
		if strings.HasPrefix(a.Attempt, "direct UDP") && udpGot.Load() > 0 {
			a.Contained, a.Evidence = false, "the host's UDP canary received a datagram"
		}
		rep.Attempts = append(rep.Attempts, a)
		rep.Contained = rep.Contained && a.Contained
	}
	rep.Alerts = r.alerts
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	return rep, nil
}

// demoPolicy is the embedded default plus the payload tool.
func demoPolicy() (*policy.Loaded, error) {
	pol := policy.Default()
	p := *pol.Policy
	p.ToolScopes = maps.Clone(pol.ToolScopes)
	p.ToolScopes[PayloadTool] = policy.ToolScope{Allow: []policy.CommandPattern{{
		Name: "payload", Command: sandbox.SelfPath, ArgPatterns: [][]string{{"payload"}}, AllowExtraArgs: true,
	}}}
	b, err := json.Marshal(&p)
	if err != nil {
		return nil, err
	}
	l, err := policy.Parse("<embedded default + demo payload tool>", b)
	if err != nil {
		return nil, fmt.Errorf("demo: policy: %w", err)
	}
	return l, nil
}

func selfBind() sandbox.Bind {
	var c sandbox.Config
	c.BindSelf()
	return c.Binds[0]
}

func auditFile(opts Options) (string, func(), error) {
	if opts.AuditPath != "" {
		return opts.AuditPath, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "airlock-demo-audit-")
	if err != nil {
		return "", nil, err
	}
	if opts.Keep {
		return filepath.Join(dir, "audit.jsonl"), func() {}, nil
	}
	return filepath.Join(dir, "audit.jsonl"), func() { os.RemoveAll(dir) }, nil
}

// plantSecret writes a canary credentials file on the host, outside every
// path the sandbox binds.
func plantSecret() (string, error) {
	dir, err := os.MkdirTemp("/var/tmp", "airlock-demo-secret-")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "credentials")
	return p, os.WriteFile(p, []byte("[default]\naws_secret_access_key = airlock-demo-canary\n"), 0o644)
}

// runner plays attempts and collects the audit events of each run.
type runner struct {
	enf    *enforcer.Enforcer
	mu     sync.Mutex
	events map[string][]audit.Event
	alerts []audit.Event
	// onStart is Options.OnStart; startMu keeps its calls one at a time.
	onStart func(step, of int, name string)
	startMu sync.Mutex
}

func (r *runner) observe(ev audit.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Kind == audit.KindBehavioral {
		r.alerts = append(r.alerts, ev)
	}
	r.events[ev.Context.RunID] = append(r.events[ev.Context.RunID], ev)
}

func (r *runner) eventsOf(runID string) []audit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]audit.Event(nil), r.events[runID]...)
}

// outcome is what one attempt's run produced.
type outcome struct {
	res     enforcer.Result
	err     error
	reports []payload.Report
	stderr  string
	events  []audit.Event
}

// play runs the attempts, the slow ones (a cap that takes seconds to
// trip) concurrently with the rest, and keeps their order in the result.
func (r *runner) play(ctx context.Context, list []attempt) []Attempt {
	out := make([]Attempt, len(list))
	var wg sync.WaitGroup
	for i, a := range list {
		run := func() {
			if r.onStart != nil {
				r.startMu.Lock()
				r.onStart(i+1, len(list), a.name)
				r.startMu.Unlock()
			}
			out[i] = a.judge(r.run(ctx, a))
		}
		if a.slow {
			wg.Add(1)
			go func() { defer wg.Done(); run() }()
			continue
		}
		run()
	}
	wg.Wait()
	return out
}

func (r *runner) run(ctx context.Context, a attempt) outcome {
	var stdout, stderr bytes.Buffer
	req := enforcer.Request{Tool: a.tool, Task: a.task, Command: a.command, Args: a.args,
		Stdout: &stdout, Stderr: &stderr, RunID: enforcer.NewRunID()}
	res, err := r.enf.Run(ctx, req)
	return outcome{res: res, err: err, reports: payload.Parse(stdout.Bytes()), stderr: stderr.String(), events: r.eventsOf(req.RunID)}
}

// offlineResolver answers no lookup: the demo's allowlisted host then
// fails after the gate allowed it, as it does on a machine with no
// network.
type offlineResolver struct{}

func (offlineResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("offline: no DNS (airlock demo --offline)")
}

func offlineDialer() proxy.Dialer {
	var d net.Dialer
	return proxy.DialerFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			return nil, fmt.Errorf("offline: refusing to dial %s", addr)
		}
		return d.DialContext(ctx, network, addr)
	})
}
