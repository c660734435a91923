package sandbox

import (
	"github.com/airlock-sandbox/airlock/limits"
)

// The parent and the init talk over a SOCK_SEQPACKET socketpair: one JSON
// message per packet, descriptors riding along as SCM_RIGHTS. The big,
// one-off input (the run's configuration and the workspace's tar stream)
// goes over a separate pipe so that no packet size limit applies to it.
//
//	parent                          init
//	  setup pipe: config, tar  -->    build the view, drop privileges
//	                           <--    ready {port} + fds [findings, listener]
//	  probe {request}          -->    (optional, repeatable)
//	                           <--    probed {results}
//	  release                  -->    execute the target
//	                           <--    started {pid}
//	                           <--    exited {status}
//
// Any step may instead answer failed {stage, error}; the init then exits.

// Message kinds.
const (
	msgReady    = "ready"
	msgProbe    = "probe"
	msgProbed   = "probed"
	msgRelease  = "release"
	msgStarted  = "started"
	msgExited   = "exited"
	msgFailed   = "failed"
	maxPacket   = 64 << 10
	maxSetupCfg = 16 << 20
)

// message is one control packet.
type message struct {
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
	// started
	Pid int `json:"pid,omitempty"`
	// exited
	Status *exitStatus `json:"status,omitempty"`
}

// exitStatus is how the target ended, as its init saw it.
type exitStatus struct {
	Code   int   `json:"code"`
	Signal int   `json:"signal"`
	UserUs int64 `json:"userUs"`
	SysUs  int64 `json:"sysUs"`
	MaxRSS int64 `json:"maxRssKb"`
}

// initConfig is what the init needs to build the sandbox, sent once over
// the setup pipe.
type initConfig struct {
	Path     string   `json:"path"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir"`
	Hostname string   `json:"hostname"`

	ReadOnly  []string `json:"readOnly"`
	ReadWrite []string `json:"readWrite"`
	Binds     []Bind   `json:"binds"`
	Hide      []string `json:"hide"`

	// TmpfsBytes sizes /tmp, /workspace, /findings and /dev/shm.
	TmpfsBytes int64 `json:"tmpfsBytes"`
	// Workspace says a tar stream of the workspace follows the config.
	Workspace bool `json:"workspace"`
	Proxy     bool `json:"proxy"`

	Rlimits []limits.Rlimit `json:"rlimits"`

	// NeedLandlock and NeedSeccomp make the init fail instead of running
	// without them.
	NeedLandlock bool `json:"needLandlock"`
	NeedSeccomp  bool `json:"needSeccomp"`
}

// ProbeRequest asks the init to check, from inside the sandbox and after
// the privilege drop, that the sandbox holds (issue 6, start-up probes).
type ProbeRequest struct {
	// CanaryFile is a host file that must be unreachable inside.
	CanaryFile string `json:"canaryFile,omitempty"`
	// CanaryAddr is a host loopback address ("127.0.0.1:port") with a
	// listener that must be unreachable inside.
	CanaryAddr string `json:"canaryAddr,omitempty"`
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
