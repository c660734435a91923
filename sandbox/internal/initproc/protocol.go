package initproc

// The parent and the init talk over a SOCK_SEQPACKET socketpair: one JSON
// message per packet, descriptors riding along as SCM_RIGHTS. The big,
// one-off input (the run's configuration and the workspace stream,
// stream.go) goes over a separate pipe so that no packet size limit
// applies to it.
//
//	parent                             init
//	                              <--  placed (in the group's cgroups)
//	setup pipe: config, workspace -->  build the view, drop privileges,
//	                                   run the probes the config asks for
//	                              <--  ready {port, probes} + fds
//	                                   [findings, workspace, listener]
//	probe {request}               -->  (optional, repeatable)
//	                              <--  probed {results}
//	release + fds                 -->  execute the target with them as
//	  [stdin, stdout, stderr]          its streams
//	                              <--  started {pid}
//	                              <--  exited {status}
//
// A session's init (Config.Session) is never released; it runs steps
// instead, one at a time, until the parent kills it:
//
//	  exec {step} + fds [stdin, stdout, stderr]  -->  fork and execute
//	                           <--    started {pid}   (or failed: the step
//	                                                   did not start)
//	  kill {step}              -->    (optional) kill every process but the init
//	                           <--    exited {status} (after every other
//	                                                   process is dead)
//
// A session built ahead, without its workspace (a pool's), gets it once,
// before its first step, as the same stream on a pipe of its own:
//
//	  copy-in + fd [stream's read end]  -->  unpack it into /workspace
//	                           <--    copied (or failed: the session ends)
//
// Any setup step may instead answer failed {stage, error}; the init then
// exits. The init's own stdout and stderr are a pipe of their own, which
// the parent reads (bounded) for its report: nothing the init writes
// reaches a target's streams.
//
// Every path, argument, variable and name the init acts on crosses as a
// rawtext string (lossless.go): what runs is exactly what was decided,
// byte for byte, UTF-8 or not.

// Message kinds.
const (
	MsgPlaced   = "placed"
	MsgReady    = "ready"
	MsgProbe    = "probe"
	MsgProbed   = "probed"
	MsgRelease  = "release"
	MsgStarted  = "started"
	MsgExited   = "exited"
	MsgFailed   = "failed"
	MsgExec     = "exec"
	MsgKill     = "kill"
	MsgCopyIn   = "copy-in"
	MsgCopied   = "copied"
	maxPacket   = 64 << 10
	maxSetupCfg = 16 << 20
)

// message is one control packet.
type Message struct {
	Kind string `json:"kind"`
	// failed
	Stage string `json:"stage,omitempty"`
	Error string `json:"error,omitempty"`
	// ready
	Port    int               `json:"port,omitempty"`
	Receipt map[string]string `json:"receipt,omitempty"`
	// probe / probed
	Probe  *ProbeRequest `json:"probe,omitempty"`
	Probes []ProbeResult `json:"probes,omitempty"`
	// started: the process, and the file it runs
	Pid  int    `json:"pid,omitempty"`
	Path string `json:"path,omitempty"`
	// exited
	Status *ExitStatus `json:"status,omitempty"`
	// exec, kill, started, exited: the session's step number
	Step int       `json:"step,omitempty"`
	Exec *ExecStep `json:"exec,omitempty"`
}

// execStep is one command a session's init runs; its standard streams
// ride along as descriptors, then, when the step has a cgroup of its own,
// Groups tasks files of the step's cgroup v1 directories and Groups of
// the session's, in the same order: the init's main thread moves itself
// into the first, forks the step there and moves back into the second
// (docs/sessions.md, "Each step").
type ExecStep struct {
	Path string `json:"path"`
	// Tree, when set, makes Path a workspace program: the init resolves
	// it in Tree, links followed only inside it, and runs the file found
	// (resolveProgram), which started names.
	Tree   string   `json:"tree,omitempty"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
	Groups int      `json:"groups,omitempty"`
	// Rlimits are set on the step's process (prlimit) as soon as it has
	// started, for the caps no cgroup of the step holds.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
}

// exitStatus is how the target ended, as its init saw it.
type ExitStatus struct {
	Code   int   `json:"code"`
	Signal int   `json:"signal"`
	UserUs int64 `json:"userUs"`
	SysUs  int64 `json:"sysUs"`
	MaxRSS int64 `json:"maxRssKb"`
}

// Config is what the init needs to build the sandbox, sent once over
// the setup pipe.
type Config struct {
	Path string `json:"path"`
	// Tree is ExecStep.Tree for the single run's target.
	Tree     string   `json:"tree,omitempty"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir"`
	Hostname string   `json:"hostname"`

	ReadOnly  []string `json:"readOnly"`
	ReadWrite []string `json:"readWrite"`
	Binds     []Bind   `json:"binds"`
	Hide      []string `json:"hide"`

	// TmpfsBytes sizes the one tmpfs that /tmp, /workspace, /findings and
	// /dev/shm share (disk_linux.go).
	TmpfsBytes int64 `json:"tmpfsBytes"`
	// Workspace says the workspace stream (stream.go) follows the config.
	Workspace bool `json:"workspace"`
	Proxy     bool `json:"proxy"`
	// Root says the sandbox's root is Config.Root instead of ReadOnly
	// host paths: a detached clone of it at fdRoot (rootful), or
	// RootPath, which the init reaches itself (rootless).
	Root     bool   `json:"root"`
	RootPath string `json:"rootPath,omitempty"`
	// Session makes the init run steps (exec messages) instead of one
	// released target.
	Session bool `json:"session"`

	// Rlimits are set on the init just before it forks the target or,
	// in a session, once after the privilege drop: every step inherits
	// them.
	Rlimits []Rlimit `json:"rlimits"`

	// NeedLandlock and NeedSeccomp make the init fail instead of running
	// without them.
	NeedLandlock bool `json:"needLandlock"`
	NeedSeccomp  bool `json:"needSeccomp"`
	// NeedOwnProc makes the init fail where the host refuses a fresh
	// /proc, instead of binding the host's (require "procfs").
	NeedOwnProc bool `json:"needOwnProc,omitempty"`
	// NoMemoryCgroup says the sandbox has no memory cgroup: the init
	// stacks the seccomp filter that refuses SysV IPC and UDP sockets,
	// kernel memory nothing would count (seccomp.InstallNoMemoryCgroup),
	// or fails without seccomp.
	NoMemoryCgroup bool `json:"noMemoryCgroup,omitempty"`
	// Network is how the sandbox is networked: NetOwn, NetShared or
	// NetUnenforced (container_linux.go), chosen by the parent by what
	// the host let it create.
	Network string `json:"network,omitempty"`

	// Probe asks for the start-up probes, run after the privilege drop
	// and answered with ready.
	Probe *ProbeRequest `json:"probe,omitempty"`

	// TestHole names the test hole a test binary asked for (Hole); an
	// init whose binary has not registered it refuses to start.
	TestHole string `json:"testHole,omitempty"`
}

// ProbeRequest asks the init to check, from inside the sandbox and after
// the privilege drop, that the sandbox holds (issue 6, start-up probes).
type ProbeRequest struct {
	// CanaryFile is a host file that must be unreachable inside.
	CanaryFile string `json:"canaryFile,omitempty"`
	// CanaryAddr is a host loopback address ("127.0.0.1:port") with a
	// listener that must be unreachable inside.
	CanaryAddr string `json:"canaryAddr,omitempty"`
	// Network is the sandbox's Config.Network, set by the init itself:
	// the probes of a sandbox in the host's network namespace check what
	// holds there instead of an empty namespace.
	Network string `json:"network,omitempty"`
}

// ProbeResult is one start-up probe's outcome. The zero value is a
// failure.
type ProbeResult struct {
	// Name is the probe's fixed name ("uid", "caps", "no_new_privs", ...).
	Name string `json:"name"`
	// OK is true only when the probe saw the sandbox hold.
	OK bool `json:"ok"`
	// Detail says what was seen, in a fixed wording per outcome.
	Detail string `json:"detail"`
}

// ProbesFailed returns the failed results, nil if all passed.
func ProbesFailed(res []ProbeResult) []ProbeResult {
	var bad []ProbeResult
	for _, r := range res {
		if !r.OK {
			bad = append(bad, r)
		}
	}
	return bad
}
