package limits

import (
	"errors"
	"fmt"
	"time"
)

// Caps are the resource caps of one run. Every field must be positive: a
// zero cap is an error, never "unlimited", so a caller that forgets a field
// fails closed.
type Caps struct {
	// Wall is the run's wall-clock budget, counted from Watch.
	Wall time.Duration
	// CPU is the CPU time of the whole group (every process and thread,
	// user and system), not of one process.
	CPU time.Duration
	// MemoryBytes caps the group's memory (anonymous, page cache, tmpfs
	// pages it writes, kernel memory); exceeding it is an OOM kill.
	MemoryBytes int64
	// Tasks caps the processes and threads alive in the group at once
	// (pids.max counts threads): a Go or JVM child spends part of it on
	// runtime threads, and so does the sandbox's init while it runs.
	Tasks int64
	// DiskWriteBytes caps the size of any one file the group writes
	// (RLIMIT_FSIZE); the sandbox also sizes its writable tmpfs with it.
	DiskWriteBytes int64
	// OpenFiles caps the open file descriptors of each process
	// (RLIMIT_NOFILE). It is lowered to the host's hard limit when larger.
	OpenFiles int64
	// OutputBytes caps what the run writes to stdout and stderr together.
	// No kernel mechanism counts it: the sandbox counts the bytes as it
	// forwards them and, past the cap, cuts the output and ends the run
	// with Trip(KilledByOutput). A Group only validates it.
	OutputBytes int64
}

// Validate reports the first cap that is not positive.
func (c Caps) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"wall", int64(c.Wall)},
		{"cpu", int64(c.CPU)},
		{"memoryBytes", c.MemoryBytes},
		{"tasks", c.Tasks},
		{"diskWriteBytes", c.DiskWriteBytes},
		{"openFiles", c.OpenFiles},
		{"outputBytes", c.OutputBytes},
	} {
		if f.v <= 0 {
			return fmt.Errorf("limits: cap %s is %d: every cap must be positive (a zero cap is not \"unlimited\")", f.name, f.v)
		}
	}
	return nil
}

// KilledBy names the cap that killed a run. The names are the "killedBy"
// values of airlock's run result; the zero value means no cap killed it.
// Watch attributes wall, cpu, memory and pids; an rlimit's signal (SIGXFSZ
// for disk, SIGXCPU or the SIGKILL of RLIMIT_CPU's hard limit for cpu) is
// mapped by SignalCause; output is the sandbox's own count (Trip).
type KilledBy string

// The caps that kill.
const (
	KilledByWall   KilledBy = "wall"
	KilledByCPU    KilledBy = "cpu"
	KilledByMemory KilledBy = "memory"
	KilledByPids   KilledBy = "pids"
	KilledByDisk   KilledBy = "disk"
	KilledByOutput KilledBy = "output"
)

// Require names: the values of a policy's "require" list that this package
// answers. Every other name that starts with "cgroup" is an error.
const (
	// RequireCgroup: a cgroup of the run's own holds the whole tree, so
	// that KillAll reaches every process (cgroup.kill or the v1 freezer).
	RequireCgroup = "cgroup"
	// RequireCgroupMemory: a group-wide memory limit enforced by OOM kill.
	RequireCgroupMemory = "cgroup-memory"
	// RequireCgroupPids: a group-wide process and thread limit.
	RequireCgroupPids = "cgroup-pids"
	// RequireCgroupCPU: the group's total CPU time is accounted, so the
	// CPU cap covers every process, not each one alone.
	RequireCgroupCPU = "cgroup-cpu"
)

// RequireNames lists every require name this package answers.
var RequireNames = []string{RequireCgroup, RequireCgroupMemory, RequireCgroupPids, RequireCgroupCPU}

// Receipt keys: the controls named in Receipt.
const (
	ControlWall      = "wall"
	ControlCPU       = "cpu"
	ControlMemory    = "memory"
	ControlTasks     = "tasks"
	ControlDisk      = "disk"
	ControlOpenFiles = "openFiles"
	ControlKill      = "kill"
	// NoteCgroupUnavailable is in the receipt only when no cgroup could
	// be made; it gives the cause (e.g. "permission denied").
	NoteCgroupUnavailable = "cgroupUnavailable"
)

// Options say where and how New makes the group.
type Options struct {
	// Name is unique per run; the group's directory is "airlock-<Name>".
	// Letters, digits, '.', '_' and '-' only, at most 64 bytes. Empty: a
	// random name.
	Name string
	// Parent is a cgroup path, relative to each hierarchy's root (for
	// example "/airlock"), under which the group is made. It must exist;
	// New does not create it. Empty: the calling process's own cgroup in
	// each v1 hierarchy, so the run stays inside whatever limits the
	// caller's cgroup has; on v2, where a cgroup with processes cannot hand
	// controllers to a child, the parent of the caller's cgroup, then the
	// caller's cgroup, then the root.
	Parent string
	// Rootless marks a caller without root. New then never tries the
	// hierarchy's root, only the caller's own subtree (a delegated one),
	// and falls back to rlimits and the wall clock without one. A caller
	// whose effective uid is not 0 is treated as rootless regardless.
	Rootless bool
	// Require lists the mechanisms the run's policy requires. The names
	// this package answers are RequireNames; others are ignored, except a
	// name starting with "cgroup" that is not one of them (a typo must not
	// drop a requirement). New fails with a *RequireError, leaving nothing
	// behind, when the host cannot provide one of them.
	Require []string
}

// validName reports whether name is 1 to 64 letters, digits, '.', '_' or
// '-'. A loop rather than a regexp: a package-level regexp is compiled in
// every process that links this package (`^[...]{1,64}$` took 0.3 ms of
// start-up, GODEBUG=inittrace=1), and each sandbox start runs two of them
// (airlock and the re-executed init).
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

func (o Options) validate() error {
	if o.Name != "" && (!validName(o.Name) || o.Name == "." || o.Name == "..") {
		return fmt.Errorf("limits: name %q: use 1 to 64 letters, digits, '.', '_' or '-'", o.Name)
	}
	for _, r := range o.Require {
		if len(r) >= 6 && r[:6] == "cgroup" && !isRequireName(r) {
			return fmt.Errorf("limits: require %q: unknown cgroup mechanism (known: %v)", r, RequireNames)
		}
	}
	return nil
}

func isRequireName(s string) bool {
	for _, n := range RequireNames {
		if s == n {
			return true
		}
	}
	return false
}

// ErrUnavailable is matched (errors.Is) by every error New returns because
// the host lacks a required mechanism.
var ErrUnavailable = errors.New("required mechanism unavailable")

// RequireError is returned by New when the policy requires a mechanism that
// the host does not give this user. Nothing was left behind.
type RequireError struct {
	// Missing are the required names the host cannot provide.
	Missing []string
	// Why says, per missing name, what was found instead.
	Why map[string]string
}

// Error names each missing mechanism and why it is missing.
func (e *RequireError) Error() string {
	s := "limits: policy requires"
	for i, m := range e.Missing {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %s (%s)", m, e.Why[m])
	}
	return s + ": not available on this host for this user"
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *RequireError) Is(target error) bool { return target == ErrUnavailable }

// Rlimit is one resource limit for the sandbox's init to set on itself just
// before it executes the target (Group.Rlimits).
type Rlimit struct {
	// Resource is the RLIMIT_* number (golang.org/x/sys/unix).
	Resource int
	// Name is the resource's name, e.g. "RLIMIT_NOFILE".
	Name string
	// Cur and Max are the soft and hard limits.
	Cur, Max uint64
}

// Stats are what a run used, read from the group after it ran.
type Stats struct {
	// CPU is the group's total CPU time; 0 without a cgroup (use the
	// child's rusage then).
	CPU time.Duration
	// PeakMemoryBytes is the group's peak memory use; 0 when unknown.
	PeakMemoryBytes int64
	// OOMKills counts processes the kernel killed for the memory cap.
	OOMKills int64
	// TasksPeak is the most tasks alive at once; 0 when unknown.
	TasksPeak int64
	// TasksLimitHits counts forks and clones refused by the tasks cap.
	TasksLimitHits int64
}
