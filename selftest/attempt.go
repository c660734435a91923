package selftest

import (
	"slices"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// Family groups the attempts by what they attack.
type Family string

// The families of the battery.
const (
	FamilyCommand     Family = "command"
	FamilyNetwork     Family = "network"
	FamilyMetadata    Family = "metadata"
	FamilyFilesystem  Family = "filesystem"
	FamilyPrivilege   Family = "privilege"
	FamilyResources   Family = "resources"
	FamilyPersistence Family = "persistence"
)

// Families lists every family, in the order the battery reports them.
var Families = []Family{FamilyCommand, FamilyNetwork, FamilyMetadata, FamilyFilesystem,
	FamilyPrivilege, FamilyResources, FamilyPersistence}

// Valid reports whether f is one of Families.
func (f Family) Valid() bool { return slices.Contains(Families, f) }

// The controls an attempt can name as the one expected to stop it.
const (
	ControlCommandGate  = "command-gate"
	ControlSearchPath   = "command-gate/search-path"
	ControlSeccomp      = "seccomp"
	ControlLandlock     = "landlock"
	ControlNetNS        = "netns"
	ControlMountNS      = "mount-ns"
	ControlReadOnly     = "read-only-mount"
	ControlMinimalDev   = "minimal-dev"
	ControlNonDumpable  = "non-dumpable-init"
	ControlEgressGate   = "egress-gate"
	ControlUserNS       = "userns/uid"
	ControlCapabilities = "capabilities"
	ControlNoSuid       = "nosuid+no_new_privs"
	ControlCopyIn       = "copy-in"
	ControlCopyOut      = "copy-out"
	ControlFDHygiene    = "fd-hygiene"
	ControlPidNS        = "pid-ns"
	ControlInitSignals  = "init-signals"
	ControlCgroupNS     = "cgroup-ns"
	ControlCgroupMemory = "cgroup-memory"
	ControlCgroupPids   = "cgroup-pids"
	ControlCgroupCPU    = "cgroup-cpu"
	ControlWall         = "wall-clock"
	ControlRlimitFsize  = "rlimit-fsize"
	ControlRlimitNofile = "rlimit-nofile"
	ControlTmpfsSize    = "tmpfs-size"
	ControlTmpfsInodes  = "tmpfs-inodes"
	ControlRlimitCPU    = "rlimit-cpu"
	ControlOutputCap    = "output-cap"
	ControlPrivateTmp   = "private-tmp"
	ControlCleanEnv     = "clean-env"
	ControlOwnIdentity  = "own-identity"
	// ControlIPCLimits is the IPC namespace's limits, rootful, or the
	// refusal of SysV IPC without a memory cgroup (docs/sandbox.md, "Caps").
	ControlIPCLimits = "ipc-limits"
	// ControlSocketMemory is the memory cgroup's count of socket buffers,
	// or the refusal of UDP sockets without one.
	ControlSocketMemory = "socket-memory"
	// ControlUserCounts is the user namespace's inotify counts.
	ControlUserCounts = "user-counts"
	// ControlRlimitSigpending is RLIMIT_SIGPENDING.
	ControlRlimitSigpending = "rlimit-sigpending"
)

// Outcome is how an attempt ended.
type Outcome string

// The outcomes. Only Contained means the expected control held; Skipped
// is used only when the run's receipt shows the host does not offer the
// control to this user (no cgroup delegation), and says so.
const (
	Contained Outcome = "contained"
	Escaped   Outcome = "ESCAPED"
	Broken    Outcome = "broken"
	Skipped   Outcome = "skipped"
)

// Result is the battery's finding for one attempt.
type Result struct {
	// Attempt names the attempt, "family/name".
	Attempt string `json:"attempt"`
	// Family is the attempt's family.
	Family Family `json:"family"`
	// Control is the control expected to stop it.
	Control string `json:"control"`
	// Outcome is contained, ESCAPED, broken or skipped.
	Outcome Outcome `json:"outcome"`
	// Evidence is what showed the outcome.
	Evidence string `json:"evidence"`
	// What describes the attempt in a sentence.
	What string `json:"what"`
	// RunID names the attempt's run in the audit stream.
	RunID string `json:"runId,omitempty"`
	// WallMs is how long the attempt took, set-up and judging included.
	WallMs int64 `json:"wallMs"`
}

// verdict is a judge's finding.
type verdict struct {
	outcome  Outcome
	evidence string
}

func contained(ev string) verdict { return verdict{Contained, ev} }
func escaped(ev string) verdict   { return verdict{Escaped, ev} }
func broken(ev string) verdict    { return verdict{Broken, ev} }
func skipped(ev string) verdict   { return verdict{Skipped, ev} }

// attempt is one entry of the battery.
type attempt struct {
	family  Family
	name    string
	control string
	what    string
	// slow attempts take seconds (a cap that trips on time): they are
	// started first so they overlap the quick ones.
	slow bool
	// needs names a cgroup requirement (limits.RequireCgroupMemory, ...):
	// on a host whose receipt shows no such cgroup, the attempt is
	// skipped, and the receipt's words are the evidence.
	needs string
	// sandboxed attempts run a payload; the others are decisions only.
	sandboxed bool
	// plan makes the attempt concrete on this host.
	plan func(fx *fixtures) (*plan, error)
}

// id is the attempt's name in reports, "family/name".
func (a *attempt) id() string { return string(a.family) + "/" + a.name }

// plan is an attempt made concrete: the request, how to judge what came
// of it, and what to undo after.
type plan struct {
	// pre are runs made before req, in order (a first run that leaves
	// something behind for req to look for); their outcome is not judged
	// unless airlock could not run them.
	pre     []enforcer.Request
	req     enforcer.Request
	judge   func(o *observation) verdict
	cleanup []func()
	// binds are host paths bound read-only into req's sandbox, besides
	// airlock's own binary.
	binds []sandbox.Bind
}
