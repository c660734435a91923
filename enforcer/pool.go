package enforcer

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/internal/canary"
	"github.com/airlock-sandbox/airlock/policy"
)

// MaxPool is the most sandboxes a Pool keeps built.
const MaxPool = 16

// PoolRequest says what a Pool builds ahead: the sandboxes of sessions
// for one egress task and image, under the Enforcer's policy.
type PoolRequest struct {
	// Size is how many sandboxes the pool keeps built, 1 to MaxPool.
	Size int
	// Task is the egress task of the sessions it serves ("" means
	// policy.NoTask); Image and ImageCache are as in SessionRequest.
	Task              string
	Image, ImageCache string
}

// Pool keeps sandboxes built ahead for one (policy, task, image) — the
// namespaces, the root, the proxy's listener, the start-up probes passed
// — so that a session opens without waiting for one (docs/sessions.md,
// "Sandboxes built ahead"). Each sandbox is handed to one session only
// and torn down with it, never given back; the pool builds a new one in
// the background, one at a time, up to Size. A sandbox waiting in the pool
// runs nothing but its idle init; its memory is charged to its own
// cgroup. Close tears down the sandboxes not handed out. Its methods are
// safe for concurrent use.
type Pool struct {
	e              *Enforcer
	req            PoolRequest
	rootfs, digest string

	ready  chan *built   // the sandboxes built, Size at most
	refill chan struct{} // a sandbox was taken: build another
	stop   context.CancelFunc
	done   chan struct{} // the builder has returned

	mu        sync.Mutex
	err       error // the last build's failure, nil once one succeeds
	closeOnce sync.Once
}

// built is a session's sandbox, built for it or ahead by a Pool, with
// what the session takes over with it.
type built struct {
	sb             *Sandbox // its task's way out served once the session opens
	canary         *canary.Canary
	rootfs, digest string    // its verified image's root and digest, "" for none
	at             time.Time // when a Pool built it ahead; zero when its session did
}

// NewPool verifies req.Image (once, for every sandbox of the pool) and
// starts building req.Size sandboxes in the background.
func (e *Enforcer) NewPool(ctx context.Context, req PoolRequest) (*Pool, error) {
	if req.Size < 1 || req.Size > MaxPool {
		return nil, fmt.Errorf("enforcer: pool: size %d: want 1 to %d", req.Size, MaxPool)
	}
	if req.Task == "" {
		req.Task = policy.NoTask
	}
	rootfs, digest, err := prepareImage(ctx, req.Image, req.ImageCache)
	if err != nil {
		return nil, fmt.Errorf("enforcer: pool: image integrity: %w", err)
	}
	bctx, stop := context.WithCancel(context.Background())
	p := &Pool{e: e, req: req, rootfs: rootfs, digest: digest, ready: make(chan *built, req.Size),
		refill: make(chan struct{}, req.Size), stop: stop, done: make(chan struct{})}
	for range req.Size {
		p.refill <- struct{}{}
	}
	go p.build(bctx)
	return p, nil
}

// PoolSandboxPrefix is how the sandbox ids of the pools of process pid
// begin (their cgroups are named "sandbox-" + the id).
func PoolSandboxPrefix(pid int) string { return "pool-" + strconv.Itoa(pid) + "-" }

// poolRetry is how long the builder waits after a failed build.
const poolRetry = time.Second

// build builds one sandbox for every refill token, until ctx ends.
func (p *Pool) build(ctx context.Context) {
	defer close(p.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.refill:
		}
		b, err := p.buildOne(ctx)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		if err != nil {
			p.refill <- struct{}{} // try again, after a pause
			select {
			case <-ctx.Done():
				return
			case <-time.After(poolRetry):
			}
			continue
		}
		select {
		case p.ready <- b:
		case <-ctx.Done():
			b.close()
			return
		}
	}
}

// buildOne builds a session's sandbox with no workspace, no findings and
// no session yet: OpenSession gives it those.
func (p *Pool) buildOne(ctx context.Context) (*built, error) {
	// Named for the process that built it, so that one airlock's pooled
	// sandboxes are told from another's (PoolSandboxPrefix). It lives
	// until its session's end, not the pool's; its task's way out (its CA
	// and bundle, its credentials' placeholders, its budgets) is the one
	// session's that gets it.
	id := PoolSandboxPrefix(os.Getpid()) + strings.TrimPrefix(NewRunID(), "run-")
	b, err := p.e.buildSession(ctx, SandboxRequest{ID: id, Task: p.req.Task, Rootfs: p.rootfs})
	if err != nil {
		return nil, err
	}
	b.digest, b.at = p.digest, time.Now()
	return b, nil
}

// buildSession starts req's sandbox as a session's (StartSandbox): the
// policy's top-level filesystem view, its life the session's wall clock,
// and the start-up probes passed inside it against a canary of its own.
// Its caps are memory, tasks and disk from the policy's session section,
// for all steps together; CPU, wall clock and open files the largest any
// tool allows, as the bound under which each step gets its own tool's
// CPU and wall-clock caps.
func (e *Enforcer) buildSession(ctx context.Context, req SandboxRequest) (*built, error) {
	cn, err := canary.New()
	if err != nil {
		return nil, err
	}
	probes := cn.Request()
	sc := e.pol.SessionCaps()
	c := e.pol.CapsFor("").Limits()
	for tool := range e.pol.ToolScopes {
		t := e.pol.CapsFor(tool).Limits()
		c.Wall, c.CPU, c.OpenFiles = max(c.Wall, t.Wall), max(c.CPU, t.CPU), max(c.OpenFiles, t.OpenFiles)
	}
	c.MemoryBytes, c.Tasks, c.DiskWriteBytes = sc.MemoryMB<<20, sc.ProcessCount, sc.DiskWriteMB<<20
	req.Filesystem, req.Caps, req.Life, req.Probes = e.pol.FilesystemFor(""), c, sc.Wall(), &probes
	sb, err := e.StartSandbox(ctx, req)
	if err != nil {
		cn.Close()
		return nil, err
	}
	return &built{sb: sb, canary: cn, rootfs: req.Rootfs}, nil
}

func (b *built) close() {
	b.sb.Close()
	b.canary.Close()
}

// refillAfter is the longest the builder waits, after a hand-out, for
// the session's first step to end before it builds the next sandbox.
const refillAfter = 100 * time.Millisecond

// OpenSession opens a session for req on a sandbox built ahead: it gets
// req.Workspace copied in and req.Findings as its findings directory now,
// its proxy serves req.Task, and it is recorded as OpenSession's is. When
// the pool has none ready, or req asks for another task or image, it
// opens one as Enforcer.OpenSession does. ctx bounds the opening only.
func (p *Pool) OpenSession(ctx context.Context, req SessionRequest) (*Session, error) {
	req, err := normalizeSession(req)
	if err != nil {
		return nil, err
	}
	if req.Task != p.req.Task || req.Image != p.req.Image {
		return p.e.OpenSession(ctx, req)
	}
	var b *built
	select {
	case b = <-p.ready:
	default:
		return p.e.OpenSession(ctx, req)
	}
	// Another is built once this session's first step has run, or
	// refillAfter after the hand-out if none has by then, so that the
	// build competes for the CPU with neither the hand-out nor the first
	// command it was built for (bench/mcp: first-pool).
	refill := sync.OnceFunc(func() { p.refill <- struct{}{} })
	time.AfterFunc(refillAfter, refill)
	s, err := p.e.newSession(req)
	if err != nil {
		b.close()
		return nil, err
	}
	s.afterStep, s.built = refill, b
	if req.Workspace != "" {
		err = s.sb.ss.CopyIn(req.Workspace)
	}
	if err == nil && req.Findings != "" {
		err = s.SetFindings(req.Findings)
	}
	if err != nil {
		b.close()
		return nil, s.openFailed(err)
	}
	if err := s.serve(); err != nil {
		return nil, err
	}
	return s, nil
}

// Ready returns how many sandboxes are built and waiting.
func (p *Pool) Ready() int { return len(p.ready) }

// Err returns why the last build failed, nil when it succeeded.
func (p *Pool) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close stops the builder and tears down every sandbox not handed out;
// sessions opened from the pool live on. Later OpenSession calls open
// sessions as Enforcer.OpenSession does.
func (p *Pool) Close() {
	p.closeOnce.Do(func() {
		p.stop()
		<-p.done
		for {
			select {
			case b := <-p.ready:
				b.close()
			default:
				return
			}
		}
	})
}
