package limits

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Group is one run's resource caps: its cgroups, if the host gave any, the
// rlimits for the init, and the watch that turns a tripped cap into a kill.
// Its methods are safe for concurrent use.
type Group struct {
	caps     Caps
	name     string
	receipt  map[string]string
	provides map[string]bool
	rlimits  []Rlimit

	killedBy atomic.Pointer[KilledBy]
	mu       sync.Mutex // guards sys
	sys      sysGroup   // the platform's part: cgroup directories and handles
}

// New makes the run's group: it validates caps and opts, creates the
// cgroup(s) and writes the limits into them.
//
// Where the host gives this user no usable cgroup, or only some controllers,
// New returns a Group that enforces what it can (rlimits, the wall clock,
// a kill of the placed process) and whose Receipt names each mechanism. If
// opts.Require names a mechanism the host lacks, New returns a
// *RequireError (errors.Is ErrUnavailable) and a nil Group, and has left
// nothing behind. Any other error also leaves nothing behind.
func New(caps Caps, opts Options) (*Group, error) {
	if err := caps.Validate(); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return newGroup(caps, opts, nil)
}

// Place moves the process pid, and every thread of it, into the group.
// Call it before the process executes the target (the sandbox's init waits
// on a pipe until placed). On v1 it writes pid to each controller's
// cgroup.procs; on v2 it is harmless after CLONE_INTO_CGROUP. Without a
// cgroup it remembers the process (by pidfd) for KillAll. On error, the
// caller must kill the process: it is not contained.
func (g *Group) Place(pid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sys.place(pid)
}

// Dir returns a directory fd of the group in the unified (v2) hierarchy,
// for SysProcAttr.UseCgroupFD (CLONE_INTO_CGROUP), and true; it returns
// false on a v1-only host or without a cgroup. On a hybrid host it is the
// unified directory that holds cgroup.kill: Place is still needed for the
// v1 controllers. The fd stays owned by the Group (closed by Delete).
func (g *Group) Dir() (fd int, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sys.dirFD()
}

// Rlimits returns the limits the init sets on itself just before execve:
// RLIMIT_CPU (seconds, rounded up: a per-process backstop under the group's
// CPU watch), RLIMIT_FSIZE (DiskWriteBytes), RLIMIT_NOFILE (OpenFiles,
// at most the host's hard limit), RLIMIT_CORE 0 (no core files),
// RLIMIT_SIGPENDING 1024 and RLIMIT_MSGQUEUE 128 KiB (each also counted
// against the sandbox's owner on the host). Without
// a memory cgroup it adds RLIMIT_DATA (MemoryBytes, per process); without
// a pids cgroup, RLIMIT_NPROC (Tasks) — which counts per user namespace
// and uid, so it holds only for a child in a user namespace of its own,
// running as a uid other than host root. RLIMIT_AS is never set: runtimes
// (Go, the JVM, V8) reserve far more address space than they use.
func (g *Group) Rlimits() []Rlimit { return append([]Rlimit(nil), g.rlimits...) }

// Receipt returns, per control (the Control* keys), the mechanism that
// enforces it on this run, e.g. "memory": "cgroup v1 memory.limit_in_bytes".
func (g *Group) Receipt() map[string]string { return maps.Clone(g.receipt) }

// Provides reports whether the group provides the require name (see
// RequireNames).
func (g *Group) Provides(require string) bool { return g.provides[require] }

// Caps returns the caps the group enforces.
func (g *Group) Caps() Caps { return g.caps }

// KilledBy returns the cap that killed the run, or "" if none did. It is
// set before the kill starts, so it is final once the caller has seen the
// run's init die and Watch has returned.
func (g *Group) KilledBy() KilledBy {
	if p := g.killedBy.Load(); p != nil {
		return *p
	}
	return ""
}

// attribute records the first cap to trip; later ones do not overwrite it.
func (g *Group) attribute(k KilledBy) bool {
	return g.killedBy.CompareAndSwap(nil, &k)
}

// Trip records k as the cap that killed the run, unless one was recorded
// first, and kills every process in the group (KillAll). It is for caps
// that the caller counts itself (KilledByOutput: the sandbox counts the
// output it forwards); Watch trips the others.
func (g *Group) Trip(k KilledBy) error {
	g.attribute(k)
	return g.KillAll()
}

// KillAll kills every process in the group and waits until it is empty:
// cgroup.kill where the kernel has it, else freeze, SIGKILL every task,
// thaw. No fork can race it, so double-forked daemons and setsid orphans
// die too. Without a cgroup it kills the placed processes (when one is the
// init of a pid namespace, the kernel kills the rest of that namespace).
func (g *Group) KillAll() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sys.killAll()
}

// Stats reads what the group used. Call it after the run and before Delete.
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sys.stats()
}

// Delete kills anything left in the group (KillAll) and removes every
// cgroup directory New made. It is safe to call more than once.
func (g *Group) Delete() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sys.remove()
}
