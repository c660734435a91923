package limits

// GroupDirs are a group's cgroup directories on the host, absolute paths,
// for a caller that works on the group's own files: the sandbox moves its
// init into the v1 directories itself (a thread writing "0" to a
// hierarchy's tasks file) and reads cgroup.procs for its evidence.
type GroupDirs struct {
	// V2 is the group's directory in the unified hierarchy, "" without
	// one. On a hybrid host it holds cgroup.kill and cgroup.freeze but few
	// controllers.
	V2 string
	// V1 maps each v1 controller the group has a directory for
	// ("memory", "pids", "cpuacct", "freezer") to that directory.
	V1 map[string]string
}

// Empty reports whether the group has no cgroup directory.
func (d GroupDirs) Empty() bool { return d.V2 == "" && len(d.V1) == 0 }

// Dirs returns the group's cgroup directories. They are empty for a group
// without any cgroup (rootless without delegation) and after Delete. The
// directories belong to the group: write to them only what Place, the
// sandbox's own placement or Freeze would.
func (g *Group) Dirs() GroupDirs {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sys.groupDirs()
}
