package limits

// Mode is how a host mounts its cgroups.
type Mode string

// The cgroup modes.
const (
	// ModeNone: no cgroup hierarchy is mounted (or not Linux).
	ModeNone Mode = "none"
	// ModeV1: only v1 hierarchies.
	ModeV1 Mode = "v1"
	// ModeHybrid: v1 controllers plus a unified (v2) hierarchy, usually at
	// /sys/fs/cgroup/unified, that has few or no controllers but does have
	// cgroup.kill, cgroup.freeze and cgroup.events.
	ModeHybrid Mode = "hybrid"
	// ModeV2: the unified hierarchy only.
	ModeV2 Mode = "v2"
)

// HostInfo is what Detect found about the host's cgroups, for this user.
type HostInfo struct {
	Mode Mode `json:"mode"`
	// UnifiedMount is where the unified hierarchy is mounted, if it is.
	UnifiedMount string `json:"unifiedMount,omitempty"`
	// UnifiedPath is the caller's cgroup in the unified hierarchy.
	UnifiedPath string `json:"unifiedPath,omitempty"`
	// CgroupKill reports whether the kernel has cgroup.kill (5.14+) and a
	// unified hierarchy is mounted.
	CgroupKill bool `json:"cgroupKill"`
	// Controllers are the ones airlock uses: memory, pids, cpu (cpuacct on
	// v1) and freezer.
	Controllers []Controller `json:"controllers"`
	// Euid is the caller's effective uid.
	Euid int `json:"euid"`
	// Delegated reports, for a caller other than root, whether it may
	// create cgroups somewhere in its own subtree.
	Delegated bool `json:"delegated"`
	// Notes explain what was not found or not usable.
	Notes []string `json:"notes,omitempty"`
}

// Controller is one cgroup controller as this user would use it.
type Controller struct {
	// Name is "memory", "pids", "cpu" or "freezer".
	Name string `json:"name"`
	// Version is 1 or 2; 0 when the host does not have it.
	Version int `json:"version"`
	// File is the file through which airlock uses it, e.g.
	// "memory.limit_in_bytes" or "cpu.stat".
	File string `json:"file,omitempty"`
	// Path is the caller's cgroup in the controller's hierarchy.
	Path string `json:"path,omitempty"`
	// Usable reports whether this user can create a group with it.
	Usable bool `json:"usable"`
	// Why says why it is not usable.
	Why string `json:"why,omitempty"`
}
