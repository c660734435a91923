package initproc

// Inside paths of the sandbox's own directories.
const (
	WorkspaceDir = "/workspace"
	FindingsDir  = "/findings"
	TmpDir       = "/tmp"
	// HomeDir is the sandbox's HOME, made in its /tmp for its user.
	HomeDir = TmpDir + "/home"
)

// SelfExe is the host path of a Bind that means "the binary the init runs
// from", which the init reaches through its own /proc/self/exe even when
// the path to it is closed to the sandbox's uid (a 0700 build directory).
const SelfExe = "/proc/self/exe"

// Bind is a host file or directory bound read-only at Inside, an absolute
// path that must not lie under a bound tree or a sandbox directory.
type Bind struct {
	Host, Inside string
}

// Rlimit is one resource limit the init sets before it forks a target.
type Rlimit struct {
	// Resource is the RLIMIT_* number (golang.org/x/sys/unix).
	Resource int `json:"resource"`
	// Name is the resource's name, e.g. "RLIMIT_NOFILE".
	Name string `json:"name"`
	// Cur and Max are the soft and hard limits.
	Cur uint64 `json:"cur"`
	Max uint64 `json:"max"`
}
