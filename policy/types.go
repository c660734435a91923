package policy

// Policy is an airlock policy file as written. The seed's policy.json (lab
// phases 1.2 and 3.1) is a valid Policy; every extension is additive.
type Policy struct {
	// ToolScopes maps a tool name to the commands it may run.
	ToolScopes map[string]ToolScope `json:"toolScopes" jsonschema:"required"`
	// Caps are the resource caps of every run; a tool may override them.
	Caps *Caps `json:"caps,omitempty"`
	// Egress is the egress gate's policy.
	Egress *Egress `json:"egress,omitempty"`
	// Filesystem is the sandbox's view of the host's files.
	Filesystem *Filesystem `json:"filesystem,omitempty"`
	// CommandSearchPath is where bare command names are resolved, in order.
	CommandSearchPath []string `json:"commandSearchPath,omitempty"`
	// Require names enforcement mechanisms the host must offer; airlock
	// refuses to run (exit 125) on a host that lacks one.
	Require []string `json:"require,omitempty"`
	// WeakerModes names the weaker modes this policy accepts on a host
	// that cannot do better: "egress-unenforced" runs a sandbox whose
	// egress the kernel does not hold (no network namespace and no
	// Landlock TCP rules, as in some containers), where only programs that
	// honour the proxy variables use the proxy. Without it such a host
	// refuses the run; the receipt names the mode whenever it is used.
	// "macos-trustd" lets processes on macOS ask trustd to verify
	// certificates (Go programs need it for TLS), whose fetches of OCSP
	// answers, CRLs and issuers bypass the proxy.
	WeakerModes []string `json:"weakerModes,omitempty" jsonschema:"uniqueItems=true,enum=egress-unenforced,enum=macos-trustd"`
	// Monitor holds the thresholds of the monitor's alert rules.
	Monitor *Monitor `json:"monitor,omitempty"`
	// Approvals says how escalated commands are approved.
	Approvals *Approvals `json:"approvals,omitempty"`
	// Session caps a session (airlock session) as a whole; each of its
	// steps also has its tool's wall-clock and CPU caps.
	Session *Session `json:"session,omitempty"`
	// Changes says what a session's patch leaves out besides what the
	// workspace's own ignore files do (docs/changes.md).
	Changes *Changes `json:"changes,omitempty"`
}

// ToolScope is what one tool may run.
type ToolScope struct {
	// Allow entries let a matching command run.
	Allow []CommandPattern `json:"allow,omitempty"`
	// Escalate entries make a matching command need human approval.
	Escalate []CommandPattern `json:"escalate,omitempty"`
	// Deny entries refuse a matching command; they win over all others.
	Deny []CommandPattern `json:"deny,omitempty"`
	// Caps override the top-level caps field by field for this tool.
	Caps *Caps `json:"caps,omitempty"`
	// Filesystem overrides the top-level filesystem view for this tool.
	Filesystem *Filesystem `json:"filesystem,omitempty"`
}

// CommandPattern is one command signature of a tool scope.
type CommandPattern struct {
	// Name names the rule in decisions and the audit stream.
	Name string `json:"name" jsonschema:"required,minLength=1"`
	// Command is a bare name ("pytest"), an absolute path ("/usr/bin/git"),
	// or a workspace program: a path or a glob of one in /workspace or /tmp
	// ("/workspace/.venv/bin/*"), resolved inside the sandbox, links
	// followed only inside that tree (docs/policy.md, "Workspace
	// programs").
	Command string `json:"command" jsonschema:"required,minLength=1"`
	// ArgPatterns are argument prefixes; the arguments must start with one.
	// An allow rule compares each argument as written; a deny or escalate
	// rule also as a path from the step's working directory, lexically, so
	// that "./.env" and "/workspace/.env" are ".env" there (docs/policy.md,
	// "Arguments and paths").
	ArgPatterns [][]string `json:"argPatterns,omitempty"`
	// AllowExtraArgs permits arguments after a matched prefix. When false,
	// the arguments must equal a signature exactly (or be empty when there
	// are no signatures).
	AllowExtraArgs bool `json:"allowExtraArgs,omitempty"`
	// Shell, on an allow rule whose command is sh, bash or dash, accepts
	// "-c SCRIPT" (and "-lc") and decides every simple command of SCRIPT
	// against the same tool's rules; a construct whose command cannot be
	// known before it runs is refused (docs/policy.md, "Shell rules"). Such
	// a rule takes no argPatterns.
	Shell bool `json:"shell,omitempty"`
	// ShellUnknown, on a shell rule, is what a script gets for a construct
	// whose command cannot be known before it runs (eval, $(...), a
	// variable in command position): "deny" (the default) or "escalate".
	ShellUnknown string `json:"shellUnknown,omitempty" jsonschema:"enum=deny,enum=escalate"`
	// Justification says why the rule exists, in words for the agent and
	// the operator: it is shown with every refusal and escalation the rule
	// decides.
	Justification string `json:"justification,omitempty" jsonschema:"maxLength=1024"`
	// Examples are command lines the rule must decide and must not, which
	// policy check and policy test run (docs/policy.md, "Examples").
	Examples *CommandExamples `json:"examples,omitempty"`
}

// Caps are resource caps. A nil field takes its default (see Defaults).
type Caps struct {
	// WallSeconds is the wall-clock limit (default: cpuSeconds).
	WallSeconds *float64 `json:"wallSeconds,omitempty" jsonschema:"exclusiveMinimum=0,maximum=86400"`
	// CPUSeconds is the CPU time of the whole process tree (default 10).
	CPUSeconds *float64 `json:"cpuSeconds,omitempty" jsonschema:"exclusiveMinimum=0,maximum=86400"`
	// MemoryMB is the memory of the whole tree, in MiB (default 512).
	MemoryMB *int64 `json:"memoryMb,omitempty" jsonschema:"minimum=1,maximum=1048576"`
	// ProcessCount is the number of tasks (processes and threads) (default 20).
	ProcessCount *int64 `json:"processCount,omitempty" jsonschema:"minimum=1,maximum=65536"`
	// DiskWriteMB caps the writable space and the size of any file written, in MiB (default 100).
	DiskWriteMB *int64 `json:"diskWriteMb,omitempty" jsonschema:"minimum=1,maximum=1048576"`
	// OpenFiles is the open-file limit of each process (default 256).
	OpenFiles *int64 `json:"openFiles,omitempty" jsonschema:"minimum=1,maximum=1048576"`
	// OutputMB caps stdout and stderr together, in MiB, as airlock forwards them; past it the output is cut and the run killed (default 16).
	OutputMB *int64 `json:"outputMb,omitempty" jsonschema:"minimum=1,maximum=1048576"`
}

// Egress is the egress gate's policy.
type Egress struct {
	// Default must be "deny": airlock has no default-allow mode.
	Default string `json:"default,omitempty" jsonschema:"enum=deny"`
	// TaskAllowlist maps a task to the destinations it may reach: each a
	// host string, or an object whose host is inspected by rules.
	TaskAllowlist map[string][]AllowEntry `json:"taskAllowlist,omitempty"`
	// AlwaysBlocked adds to the built-in floor of metadata destinations.
	AlwaysBlocked []string `json:"alwaysBlocked,omitempty"`
	// Credentials are headers the proxy adds to the requests they match,
	// with values the sandbox never sees (docs/egress.md, "Credentials").
	Credentials []Credential `json:"credentials,omitempty"`
	// Budgets caps each task's traffic, per command (a run, or one step of
	// a session), for the task and per host.
	Budgets map[string]Budget `json:"budgets,omitempty"`
}

// Filesystem is the sandbox's view of the host's files.
type Filesystem struct {
	// ReadOnly host paths are bound read-only at the same place.
	ReadOnly []string `json:"readOnly,omitempty"`
	// ReadWrite host paths are bound writable at the same place.
	ReadWrite []string `json:"readWrite,omitempty"`
}

// Monitor holds the thresholds of the monitor's alert rules.
type Monitor struct {
	// EgressDenyBurst denied egress attempts within WindowSeconds raise
	// an alert (a command-and-control or exfiltration signature).
	EgressDenyBurst *int64 `json:"egressDenyBurst,omitempty" jsonschema:"minimum=1"`
	// CommandDenyRepeat denied commands within WindowSeconds raise an
	// alert (an agent probing the allowlist).
	CommandDenyRepeat *int64 `json:"commandDenyRepeat,omitempty" jsonschema:"minimum=1"`
	// WindowSeconds is the sliding window of both rules.
	WindowSeconds *float64 `json:"windowSeconds,omitempty" jsonschema:"exclusiveMinimum=0,maximum=86400"`
}

// Approvals says how escalated commands are approved (docs/approvals.md).
type Approvals struct {
	// Decider is an external program that answers approval requests: an
	// absolute path, then its arguments. It runs outside the sandbox, reads
	// the request as JSON on stdin and answers allow or deny on stdout.
	// Without one, requests wait for the operator's airlock approve.
	Decider []string `json:"decider,omitempty" jsonschema:"minItems=1"`
	// DeciderTimeoutSeconds bounds the decider's run; past it the
	// decider is killed and the request denied (default 30).
	DeciderTimeoutSeconds *float64 `json:"deciderTimeoutSeconds,omitempty" jsonschema:"exclusiveMinimum=0,maximum=3600"`
	// TTLSeconds is how long a request may be answered and its approval
	// redeemed (default 900, at most 86400).
	TTLSeconds *float64 `json:"ttlSeconds,omitempty" jsonschema:"exclusiveMinimum=0,maximum=86400"`
}

// Session caps one session as a whole: every step's processes and files
// together. A nil field takes its default (see SessionFor).
type Session struct {
	// MemoryMB is the memory of the whole session, files in /tmp and
	// /workspace included, in MiB (default 1024).
	MemoryMB *int64 `json:"memoryMb,omitempty" jsonschema:"minimum=1,maximum=1048576"`
	// ProcessCount is the number of tasks (processes and threads) of the
	// session at any time, its init's included (default 64).
	ProcessCount *int64 `json:"processCount,omitempty" jsonschema:"minimum=1,maximum=65536"`
	// DiskWriteMB caps the session's writable space and the size of any
	// file written, in MiB (default 256).
	DiskWriteMB *int64 `json:"diskWriteMb,omitempty" jsonschema:"minimum=1,maximum=1048576"`
	// WallSeconds is the session's whole life, from start to teardown
	// (default 3600).
	WallSeconds *float64 `json:"wallSeconds,omitempty" jsonschema:"exclusiveMinimum=0,maximum=604800"`
	// IdleSeconds ends a session in which no command ran for this long
	// (default 600).
	IdleSeconds *float64 `json:"idleSeconds,omitempty" jsonschema:"exclusiveMinimum=0,maximum=604800"`
	// Egress caps the session's traffic over its whole life, for all its
	// steps together, and per host.
	Egress *Budget `json:"egress,omitempty"`
	// OnAlert names the monitor's alerts that stop the session when its
	// own records raise one: its sandbox frozen, evidence kept, the step
	// ended with exit 121 and every later step refused (docs/sessions.md,
	// "Stopped by an alert").
	OnAlert []string `json:"onAlert,omitempty" jsonschema:"uniqueItems=true"`
}

// Changes says what a session's patch (airlock session changes, stop
// --patch, the MCP server's --patch) leaves out.
type Changes struct {
	// Exclude are patterns in .gitignore syntax, as if in a .gitignore at
	// /workspace's root: the paths they exclude, in the workspace as copied
	// in and as it is now, are not compared, and the patch carries none of
	// their changes; the manifest counts them. Unlike the workspace's own
	// .gitignore files, they apply to the files the workspace had too.
	Exclude []string `json:"exclude,omitempty" jsonschema:"maxItems=256,uniqueItems=true"`
}
