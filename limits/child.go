package limits

// ChildCaps are the caps of a child group: one step of a session, under
// the session's Group (Group.NewChild). Both must be positive.
type ChildCaps struct {
	// MemoryBytes caps the child's memory.
	MemoryBytes int64
	// Tasks caps the processes and threads alive in the child at once.
	Tasks int64
}

// Child is one step's own cgroup inside a session's Group: its memory
// and pids limits, under the session's (the kernel charges the child's
// use to the session too). Only the memory and pids controllers are
// split: the step stays in the session's group for the CPU time, the
// freezer and the kill. Where the session's group has no cgroup for a
// controller, the child holds nothing for it and Rlimits says what the
// step's process must carry instead. Its methods are not safe for
// concurrent use with Delete.
type Child struct {
	group   *Group
	caps    ChildCaps
	limited bool // caps written
	receipt map[string]string
	rlimits []Rlimit
	sys     sysChild
}

// Caps returns the caps the child enforces: those given to Limit,
// lowered to what the session had left then.
func (c *Child) Caps() ChildCaps { return c.caps }

// Receipt returns, for ControlMemory and ControlTasks, the mechanism that
// holds the child's cap.
func (c *Child) Receipt() map[string]string {
	return map[string]string{ControlMemory: c.receipt[ControlMemory], ControlTasks: c.receipt[ControlTasks]}
}

// Rlimits returns what the step's process must carry for the caps no
// child cgroup holds: RLIMIT_DATA for memory, RLIMIT_NPROC for tasks
// (see Group.Rlimits for what each counts). Empty when the child's
// cgroups hold both.
func (c *Child) Rlimits() []Rlimit { return append([]Rlimit(nil), c.rlimits...) }
