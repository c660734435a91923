package runbook

import (
	"maps"
	"strings"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// Fixed reasons of the start-up events.
const (
	reasonLaunched = "sandbox launched: every start-up probe passed inside the sandbox"
	reasonRefused  = "start-up check failed, nothing was run: "
	reasonSetup    = "airlock could not set the launch up, nothing was run: "
	noProbes       = "no start-up probe reported: refusing to run (fail closed)"
)

// ProbeFailure returns a sentence naming every failed probe with what it
// saw ("caps: CapEff is not empty; seccomp: Seccomp is not 2"), or ""
// when every probe passed. An empty result list is a failure: a probe run
// that reports nothing has proved nothing.
func ProbeFailure(res []enforcer.ProbeResult) string {
	if len(res) == 0 {
		return noProbes
	}
	var parts []string
	for _, r := range res {
		if !r.OK {
			parts = append(parts, r.Name+": "+r.Detail)
		}
	}
	return strings.Join(parts, "; ")
}

// ProbeDetails returns the probes' outcomes as audit event details:
// "probe.NAME" → "ok: DETAIL" or "failed: DETAIL".
func ProbeDetails(res []enforcer.ProbeResult) map[string]string {
	d := make(map[string]string, len(res))
	for _, r := range res {
		state := "failed: "
		if r.OK {
			state = "ok: "
		}
		d["probe."+r.Name] = state + r.Detail
	}
	return d
}

// LaunchedEvent is the sandbox_launched event of a sandbox whose start-up
// probes all passed (check with ProbeFailure first): a lifecycle info
// event over base whose details carry every probe's outcome and extra
// (the test id, the image digest, the policy digest).
func LaunchedEvent(base audit.Context, res []enforcer.ProbeResult, extra map[string]string) audit.Event {
	ctx := base
	ctx.Event = audit.EventSandboxLaunched
	ctx.Details = ProbeDetails(res)
	maps.Copy(ctx.Details, base.Details)
	maps.Copy(ctx.Details, extra)
	return audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: reasonLaunched, Context: ctx}
}

// RefusedEvent is the startup_refused event: a lifecycle deny over base
// whose reason says why nothing was run (a failed probe, a canary
// reached) and whose details carry every probe's outcome when there are
// any. It is a security event (the monitor's startup_refused rule);
// SetupFailedEvent is the record of any other failure to start.
func RefusedEvent(base audit.Context, why string, res []enforcer.ProbeResult) audit.Event {
	ctx := base
	ctx.Event = audit.EventStartupRefused
	ctx.Details = ProbeDetails(res)
	maps.Copy(ctx.Details, base.Details)
	return audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionDeny, Reason: reasonRefused + why, Context: ctx}
}

// SetupFailedEvent is the setup_failed event: a lifecycle info record
// over base saying why airlock could not set the launch up (a command not
// installed, an image that does not verify, an unmet require, a
// workspace over its cap), so that nothing was run. It is not a security
// event: no control refused anything.
func SetupFailedEvent(base audit.Context, why string) audit.Event {
	ctx := base
	ctx.Event = audit.EventSetupFailed
	ctx.Details = maps.Clone(base.Details)
	return audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: reasonSetup + why, Context: ctx}
}
