//go:build linux || darwin

package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// maxOutput bounds what the battery keeps of a run's stdout and stderr.
const maxOutput = 1 << 20

// battery is one run of the battery.
type battery struct {
	opts Options
	pol  *policy.Loaded
	log  *audit.Log
	fx   *fixtures
	runs atomic.Int64

	mu     sync.Mutex
	events map[string][]audit.Event

	// receipt is the preflight run's receipt; preflightErr is why the
	// preflight failed, "" when it passed.
	receipt      map[string]string
	preflightErr string
}

// Run runs the battery on this host and returns its report. The error is
// set only when the battery could not be set up or ctx ended; attempts
// that escaped or broke are in the report (Report.OK is false).
func Run(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	list, err := attempts(opts.Families)
	if err != nil {
		return nil, err
	}
	pol, err := Policy()
	if err != nil {
		return nil, err
	}
	// The egress gate watches the host's addresses with one descriptor
	// for the life of the process (egress.HostAddrs): open before the
	// snapshot, it is not a run's residue.
	egress.HostAddrs().Contains(netip.IPv6Unspecified())
	before := takeSnapshot()
	fx, err := newFixtures()
	if err != nil {
		return nil, err
	}
	rep := &Report{Host: hostInfo()}
	auditPath, keep := opts.AuditPath, opts.AuditPath != ""
	if !keep {
		auditPath = filepath.Join(fx.root, "audit.jsonl")
	}
	log, err := audit.Open(auditPath)
	if err != nil {
		fx.close()
		return nil, fmt.Errorf("selftest: audit: %w", err)
	}
	b := &battery{opts: opts, pol: pol, log: log, fx: fx, events: map[string][]audit.Event{}}
	if slices.ContainsFunc(list, func(a attempt) bool { return a.sandboxed }) {
		rep.Preflight = b.preflight(ctx)
		rep.Host.Receipt = b.receipt
	}
	rep.Attempts = b.play(ctx, list)
	closeErr := log.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("selftest: audit: %w", closeErr)
	}
	if keep {
		rep.AuditPath = auditPath
	}
	fx.close()
	rep.Residue = residue(before, fx.token, []string{fx.root, fx.varRoot})
	rep.WallMs = time.Since(start).Milliseconds()
	rep.summarize()
	return rep, errors.Join(ctx.Err(), closeErr)
}

func hostInfo() Host {
	h := Host{OS: runtime.GOOS, Arch: runtime.GOARCH, UID: os.Geteuid(), Rootless: os.Geteuid() != 0}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return h
}

// collect keeps each audit event under its run.
func (b *battery) collect(ev audit.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events[ev.Context.RunID] = append(b.events[ev.Context.RunID], ev)
}

func (b *battery) eventsOf(runID string) []audit.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]audit.Event(nil), b.events[runID]...)
}

// selfBind binds this binary into every sandbox at sandbox.SelfPath.
func selfBind() sandbox.Bind {
	var c sandbox.Config
	c.BindSelf()
	return c.Binds[0]
}

// execute makes one run of req, with binds besides airlock's binary, and
// observes it.
func (b *battery) execute(ctx context.Context, req enforcer.Request, binds ...sandbox.Bind) *observation {
	g := &guard{}
	enf, err := enforcer.New(b.pol, b.log, enforcer.Options{
		Resolver: b.fx.resolver, Dialer: g, Binds: append([]sandbox.Bind{selfBind()}, binds...), OnEvent: b.collect,
	})
	if err != nil {
		return &observation{err: err, res: enforcer.Result{ExitCode: enforcer.ExitSetup}}
	}
	req.RunID = fmt.Sprintf("%s-r%d", b.fx.token, b.runs.Add(1))
	req.Env = append(append([]string(nil), req.Env...), envToken+"="+b.fx.token)
	stdout, stderr := &capped{max: maxOutput}, &capped{max: maxOutput}
	req.Stdout, req.Stderr = stdout, stderr
	rctx, cancel := runWith(ctx, b.opts.Timeout)
	defer cancel()
	res, err := enf.Run(rctx, req)
	o := &observation{res: res, err: err, stdout: stdout.String(), stderr: stderr.String(),
		events: b.eventsOf(req.RunID), dials: g.dials(),
		timedOut: errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil}
	o.reports = payload.Parse([]byte(o.stdout))
	return o
}

// capped is a buffer that keeps the first max bytes written to it.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// preflight checks that the battery can judge this host: a payload runs
// inside a sandbox as uid 65534 with no_new_privs and seccomp, and the
// proxy reaches an allowlisted loopback upstream (so a refusal is the
// gate's, not a proxy that reaches nothing).
func (b *battery) preflight(ctx context.Context) []Result {
	var out []Result
	check := func(name, what string, req enforcer.Request, judge func(*observation) (bool, string)) {
		start := time.Now()
		o := b.execute(ctx, req)
		ok, ev := judge(o)
		r := Result{Attempt: "preflight/" + name, Family: "preflight", Control: "(baseline)", What: what,
			Outcome: Passed, Evidence: ev, RunID: req.RunID, WallMs: time.Since(start).Milliseconds()}
		if !ok {
			r.Outcome = Broken
			if b.preflightErr == "" {
				b.preflightErr = name + ": " + ev
			}
		}
		if name == "payload-runs" {
			b.receipt = o.res.Receipt
		}
		out = append(out, r)
		if b.opts.OnResult != nil {
			b.opts.OnResult(r)
		}
	}
	check("payload-runs", sandboxedWhat, payloadRequest(toolPayload, taskNone, helloPayload), sandboxedJudge)
	check("proxy-reaches-upstream", "the proxy reaches an allowlisted upstream on the host's loopback",
		payloadRequest(toolPayload, taskUpstream, getPayload, "http://"+b.fx.upstream+"/"), func(o *observation) (bool, string) {
			rep, v := ran(o)
			switch {
			case v != nil:
				return false, v.evidence
			case !rep.Succeeded || !strings.Contains(rep.Detail["body"], b.fx.token):
				return false, "the allowed request did not reach the upstream: " + rep.Evidence
			}
			return true, "HTTP " + rep.Detail["status"] + " from the battery's upstream through the proxy"
		})
	return out
}

// play runs the attempts, Parallel at a time, slow ones first, and
// returns their results in battery order.
func (b *battery) play(ctx context.Context, list []attempt) []Result {
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return list[order[i]].slow && !list[order[j]].slow })
	n := b.opts.Parallel
	if n <= 0 {
		n = 3
	}
	out := make([]Result, len(list))
	work := make(chan int)
	var wg sync.WaitGroup
	var report sync.Mutex
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = b.one(ctx, &list[i])
				if b.opts.OnResult != nil {
					report.Lock()
					b.opts.OnResult(out[i])
					report.Unlock()
				}
			}
		}()
	}
	for _, i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// one plays one attempt and judges it.
func (b *battery) one(ctx context.Context, a *attempt) Result {
	start := time.Now()
	r := Result{Attempt: a.id(), Family: a.family, Control: a.control, What: a.what}
	v := b.judged(ctx, a, &r)
	r.Outcome, r.Evidence, r.WallMs = v.outcome, v.evidence, time.Since(start).Milliseconds()
	return r
}

func (b *battery) judged(ctx context.Context, a *attempt, r *Result) verdict {
	if ctx.Err() != nil {
		return broken("not run: " + ctx.Err().Error())
	}
	if a.sandboxed && b.preflightErr != "" {
		return broken("not run: the preflight failed (" + b.preflightErr + ")")
	}
	if a.needs != "" {
		if why, skip := cgroupSkip(a.needs, b.receipt); skip {
			return skipped(why)
		}
	}
	p, err := a.plan(b.fx)
	if err != nil {
		return broken("could not set the attempt up on the host: " + err.Error())
	}
	defer func() {
		for _, f := range p.cleanup {
			f()
		}
	}()
	for _, pre := range p.pre {
		o := b.execute(ctx, pre)
		if rep, v := ran(o); v != nil || !rep.Succeeded {
			why := rep.Evidence
			if v != nil {
				why = v.evidence
			}
			return broken("the first run did not do its part: " + why)
		}
	}
	o := b.execute(ctx, p.req, p.binds...)
	r.RunID = o.res.RunID
	return p.judge(o)
}
