package runbook

import (
	"context"
	"fmt"
	"reflect"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/image"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/policy"
)

// decide takes the command gate's decision on every step and records each
// one. A plan is approved as a whole: when any step is denied or
// escalated, nothing starts (a plan that would stop half-way for a
// refusal is refused before it can leave a half-done workspace), and
// every refused step is named.
func (l *launch) decide(context.Context) bool {
	var refused []int
	for i, s := range l.plan.Steps {
		d := l.enf.Decide(enforcer.Request{Tool: s.Tool, Command: s.Command, Args: s.Args})
		l.decisions = append(l.decisions, d)
		l.res.Steps = append(l.res.Steps, StepResult{
			Index: i + 1, Name: s.Label(i), Tool: s.Tool, Command: s.Command, Args: append([]string{}, s.Args...), // [] in JSON, never null
			Decision: d.Verdict, Reason: d.Why(), Rule: d.Rule, Status: StepNotRun,
		})
		if _, err := l.record(audit.FromDecision(d, l.stepContext(i))); err != nil {
			l.res.ExitCode, l.res.Outcome, l.res.Reason, l.res.Error = ExitSetup, OutcomeSetup, err.Error(), err.Error()
			return false
		}
		if !d.Allowed() {
			refused = append(refused, i)
		}
	}
	if len(refused) == 0 {
		return true
	}
	first := refused[0]
	l.res.ExitCode, l.res.Outcome = ExitEscalated, OutcomeDenied
	for _, i := range refused {
		l.res.Steps[i].Status = StepDenied
		if l.decisions[i].Verdict != decision.Escalate {
			l.res.ExitCode = ExitDenied
		}
	}
	l.res.Reason = fmt.Sprintf("the command gate refused %s, so no step was run: %s", l.quoteStep(first), l.decisions[first].Why())
	if len(refused) > 1 {
		l.res.Reason += fmt.Sprintf(" (and %d more refused steps)", len(refused)-1)
	}
	return false
}

// prepareImage verifies and unpacks the pinned image, when there is one.
func (l *launch) prepareImage(ctx context.Context) bool {
	if l.opts.Image == "" {
		return true
	}
	ref, err := image.ParseRef(l.opts.Image)
	if err != nil {
		return l.setupFailed(err)
	}
	p, err := image.Prepare(ctx, ref, l.opts.ImageCache, image.Options{})
	if err != nil {
		return l.setupFailed(fmt.Errorf("the image does not verify: %w", err))
	}
	l.rootfs = p.Rootfs
	l.res.Image = &ImageInfo{Ref: ref.String(), Digest: p.Digest.String(), ImageDigest: p.ImageDigest.String()}
	l.image = map[string]string{"image": ref.String(), "imageDigest": p.Digest.String(), "imageManifest": p.ImageDigest.String()}
	return true
}

// resolve finds each step's executable as a session's step finds it
// (enforcer.Locate: in the image's root when there is one; a workspace
// program inside the sandbox, as the step starts), and works out the
// sandbox's caps and filesystem view.
func (l *launch) resolve(context.Context) bool {
	pol := l.enf.Policy()
	for i, s := range l.plan.Steps {
		path, err := l.enf.Locate(l.rootfs, l.decisions[i], s.Command)
		if err != nil {
			return l.setupFailed(fmt.Errorf("%s: %w", l.quoteStep(i), err))
		}
		l.res.Steps[i].Path = path
	}
	l.caps = sessionCaps(pol.Policy, l.plan.Steps)
	fs := pol.FilesystemFor(l.plan.Steps[0].Tool)
	for i, s := range l.plan.Steps[1:] {
		if !reflect.DeepEqual(pol.FilesystemFor(s.Tool), fs) {
			return l.setupFailed(fmt.Errorf("%s: tool %q has another filesystem view than tool %q, and one sandbox has one view; "+
				"give the tools the same filesystem in the policy, or split the plan", l.quoteStep(i+1), s.Tool, l.plan.Steps[0].Tool))
		}
	}
	l.fs = fs
	return true
}

// sessionCaps are the caps of the plan's one sandbox. Memory, tasks, disk
// and open files hold for the whole session (its files persist from step
// to step), so they are the largest any step's tool allows; CPU is the
// largest too, as the bound under which each step gets its own tool's
// CPU and wall-clock caps.
func sessionCaps(p *policy.Policy, steps []Step) limits.Caps {
	var c limits.Caps
	for _, s := range steps {
		e := p.CapsFor(s.Tool).Limits()
		c.Wall = max(c.Wall, e.Wall)
		c.CPU = max(c.CPU, e.CPU)
		c.MemoryBytes = max(c.MemoryBytes, e.MemoryBytes)
		c.Tasks = max(c.Tasks, e.Tasks)
		c.DiskWriteBytes = max(c.DiskWriteBytes, e.DiskWriteBytes)
		c.OpenFiles = max(c.OpenFiles, e.OpenFiles)
		c.OutputBytes = max(c.OutputBytes, e.OutputBytes)
	}
	return c
}
