package runbook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/canary"
	"github.com/airlock-sandbox/airlock/policy"
)

// startSandbox makes the canary, snapshots the watched host paths, and
// starts the plan's one sandbox.
func (l *launch) startSandbox(ctx context.Context) bool {
	parent, mode := "", os.FileMode(0o700)
	if h := l.opts.test; h != nil && h.canaryMode != 0 {
		parent, mode = h.canaryParent, h.canaryMode
	}
	c, err := canary.NewIn(parent, mode)
	if err != nil {
		return l.setupFailed(err)
	}
	l.canary = c
	// A task's budget holds per step, the session's for the whole plan;
	// the CA for as long as every step could run. The start-up probes are
	// the launch's to run (startProbes), and to record.
	req := enforcer.SandboxRequest{ID: l.opts.RunID, Task: l.res.Task, Workspace: l.opts.Workspace, Findings: l.opts.Findings,
		Rootfs: l.rootfs, Filesystem: l.fs, Caps: l.caps, Life: l.caps.Wall * time.Duration(len(l.plan.Steps)), Hide: []string{l.opts.PlanFile}}
	var sess session
	if h := l.opts.test; h != nil && h.config != nil {
		req.Adjust = func(cfg *enforcer.SandboxConfig) { h.config(cfg, c) }
	}
	if h := l.opts.test; h != nil && h.start != nil {
		sess, err = h.start(ctx, l.enf, req, l.open)
	} else {
		sess, err = l.open(ctx, req)
	}
	if errors.Is(err, enforcer.ErrProbe) {
		return l.refuse(err.Error(), nil)
	}
	if err != nil {
		return l.setupFailed(err)
	}
	l.sess, l.closeSession = sess, sync.OnceValues(sess.Close)
	// Once the session has made the findings directory, and before
	// anything runs in it (the init's own probes aside).
	l.hostFiles, l.hostTrees = l.sentinels()
	l.hostBefore = snapshotHost(l.hostFiles, l.hostTrees, l.unwatched())
	return true
}

// open starts the plan's sandbox, and the enforcer.Session on it that
// runs the steps: an alert of the policy's session.onAlert that one of
// the launch's records raises is an escape signal (alerted).
func (l *launch) open(ctx context.Context, req enforcer.SandboxRequest) (session, error) {
	sb, err := l.enf.StartSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	return onSandbox{sb, l.enf.SessionOn(sb, l.opts.RunID, l.alerted)}, nil
}

// startRequest is the start-up probes' request: the canary.
func (l *launch) startRequest(proxyAddr string) enforcer.ProbeRequest {
	req := l.canary.Request()
	if h := l.opts.test; h != nil && h.startProbe != nil {
		req = h.startProbe(req, proxyAddr)
	}
	return req
}

// startProbes runs the start-up probes inside the sandbox, from its init
// after the privilege drop, and refuses the launch on any failure.
func (l *launch) startProbes(context.Context) bool {
	res, err := l.sess.Probe(l.startRequest(l.sess.ProxyAddr()))
	l.res.Probes = res
	if err != nil {
		return l.refuse("start-up probes: "+err.Error(), res)
	}
	if why := ProbeFailure(res); why != "" {
		return l.refuse("start-up probe failed: "+why, res)
	}
	if n := l.canary.Accepted(); n > 0 {
		return l.refuse(fmt.Sprintf("the host's canary listener accepted %d connection(s) during the start-up probes", n), l.res.Probes)
	}
	return true
}

// announce starts the egress proxy (the task's gate, CA, credentials
// and budgets, as every entry point's) inside the sandbox's network namespace
// and writes sandbox_launched, the point from which the audit chain is
// watched and the launch's records go through its session.
func (l *launch) announce(context.Context) bool {
	l.launched.Store(true)
	procs, err := newSandboxProcs(l.sess.Pid())
	if err != nil {
		return l.setupFailed(err)
	}
	l.procs = procs
	if err := l.sess.Serve(l.egressRecorder()); err != nil {
		return l.setupFailed(err)
	}
	details := map[string]string{"policy": l.enf.Policy().Digest, "steps": strconv.Itoa(len(l.plan.Steps))}
	if l.opts.PlanFile != "" {
		details["plan"] = l.opts.PlanFile
	}
	maps.Copy(details, l.image)
	ev, err := l.record(LaunchedEvent(l.base, l.res.Probes, details))
	if err != nil {
		return l.setupFailed(err)
	}
	l.chain, err = watchChain(l.enf.Log().Path(), ev)
	if err != nil {
		return l.setupFailed(err)
	}
	return true
}

// sentinels are the host paths watched for writes: files that no run
// has any business changing (airlock's own binary among them, against a
// CVE-2019-5736 style overwrite), and trees that the sandbox never sees:
// the canary and the host's findings directory, whole, and the host's
// workspace to its top-level entries (it is copied in, never shown; a
// whole large repository would make every check slow).
func (l *launch) sentinels() (files []string, trees []watchedTree) {
	files = append(files, defaultSentinels...)
	if exe, err := os.Executable(); err == nil {
		files = append(files, exe)
	}
	for _, p := range append([]string{l.enf.Policy().Source, l.opts.PlanFile}, l.opts.Sentinels...) {
		if abs := absPath(p); abs != "" {
			files = append(files, abs)
		}
	}
	trees = append(trees, watchedTree{Path: l.canary.Dir()})
	if abs := absPath(l.opts.Findings); abs != "" {
		trees = append(trees, watchedTree{Path: abs})
	}
	if abs := absPath(l.opts.Workspace); abs != "" {
		trees = append(trees, watchedTree{Path: abs, Depth: 1})
	}
	return files, trees
}

// unwatched are paths under the watched trees that airlock itself
// writes while the plan runs: the audit log and the evidence.
func (l *launch) unwatched() []string {
	skip := []string{absPath(l.enf.Log().Path())}
	if d := absPath(l.opts.EvidenceDir); d != "" {
		skip = append(skip, d)
	}
	return skip
}

// absPath makes p absolute and clean, "" for "" or the embedded policy.
func absPath(p string) string {
	if p == "" || p == policy.EmbeddedName {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}
