package runbook

// Signal names: each is a fact that suggests the sandbox no longer holds
// (issue 6, "suspected escape"). Any one of them starts the procedure.
const (
	// SignalCgroup: a process of the sandbox (descended from its init,
	// or in its pid namespace) is in another cgroup than the init was
	// placed in at launch: something moved it out of the caps.
	SignalCgroup = "process_outside_cgroup"
	// SignalAuditChain: the audit log no longer verifies from the launch
	// event on (an edited, removed, inserted or reordered line, the
	// launch line gone, the file replaced).
	SignalAuditChain = "audit_chain_broken"
	// SignalSeccompKill: a step died of SIGSYS, the seccomp filter's kill
	// on an escape syscall (a foreign-architecture or x32 call).
	SignalSeccompKill = "seccomp_kill"
	// SignalMetadata: the egress proxy refused an always-blocked
	// destination (cloud metadata, link-local): a credential-theft attempt.
	SignalMetadata = "metadata_access"
	// SignalProbe: a start-up probe, re-run inside the sandbox after a
	// step, failed: an isolation property that held at launch is gone.
	SignalProbe = "probe_failed_after_launch"
	// SignalHostWrite: a watched host path (airlock's own binary, the
	// account databases, the policy, the plan, the host findings and
	// workspace directories, the canary) changed while the plan ran.
	SignalHostWrite = "host_write"
	// SignalCanary: the host's canary listener accepted a connection.
	SignalCanary = "canary_reached"
	// SignalInitDied: the sandbox's init died on its own during a step
	// or the probes (sandbox.ErrInitDied): a crash, or a signal from
	// inside that got through to it.
	SignalInitDied = "init_died"
	// SignalLeftAfterStep: on macOS, which has no cgroup or pid
	// namespace to hold them, a process descended from airlock (a step's
	// command or what it started) is alive after the step, whose watch
	// kills its whole tree.
	SignalLeftAfterStep = "process_left_after_step"
	// SignalAlert: a record of the launch raised an alert that the
	// policy's session.onAlert names (docs/policy.md), as it stops a
	// session.
	SignalAlert = "session_alert"
)

// Signal is one fired escape signal.
type Signal struct {
	// Name is one of the Signal* constants.
	Name string `json:"signal"`
	// Step is the 1-based number of the step after (or during) which it
	// fired; 0 when no step had started.
	Step int `json:"step"`
	// Detail says what was seen, naming paths, pids and reasons.
	Detail string `json:"detail"`
}
