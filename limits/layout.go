package limits

import (
	"path"
	"slices"
	"strings"
)

// v1Controllers are the v1 controllers a group uses: memory and pids for
// limits, cpuacct for the group's CPU time, freezer for a race-free kill.
var v1Controllers = []string{"memory", "pids", "cpuacct", "freezer"}

// layout is where the host mounts the hierarchies a group uses and where
// the calling process sits in them.
type layout struct {
	mode Mode
	// unified is the mount point of the unified hierarchy ("" if none),
	// unifiedOwn the caller's cgroup in it, relative to that mount.
	unified, unifiedOwn string
	// v1 maps a controller to its mount point; v1Own to the caller's
	// cgroup in it, relative to that mount.
	v1, v1Own map[string]string
}

// buildLayout picks, per hierarchy, a mount that shows the caller's cgroup.
func buildLayout(mounts []cgroupMount, pc procCgroup) layout {
	l := layout{v1: map[string]string{}, v1Own: map[string]string{}}
	for _, m := range mounts {
		if m.v2 {
			own, ok := relativeTo(pc.unified, m.root)
			if !pc.hasUnified || !ok {
				continue
			}
			// Prefer the standard places over any other cgroup2 mount
			// (a test's, a container runtime's).
			if l.unified == "" || m.point == "/sys/fs/cgroup" ||
				(m.point == "/sys/fs/cgroup/unified" && l.unified != "/sys/fs/cgroup") {
				l.unified, l.unifiedOwn = m.point, own
			}
			continue
		}
		for _, c := range m.controllers {
			if !slices.Contains(v1Controllers, c) {
				continue
			}
			p, ok := pc.v1[c]
			if !ok {
				continue
			}
			own, ok := relativeTo(p, m.root)
			if _, seen := l.v1[c]; !seen && ok {
				l.v1[c], l.v1Own[c] = m.point, own
			}
		}
	}
	switch {
	case len(l.v1) > 0 && l.unified != "":
		l.mode = ModeHybrid
	case len(l.v1) > 0:
		l.mode = ModeV1
	case l.unified != "":
		l.mode = ModeV2
	default:
		l.mode = ModeNone
	}
	return l
}

// relativeTo returns p (a path in the hierarchy) relative to a mount whose
// root is root, or false when the mount does not show p.
func relativeTo(p, root string) (string, bool) {
	if !strings.HasPrefix(p, "/") || !strings.HasPrefix(root, "/") {
		return "", false
	}
	p, root = path.Clean(p), path.Clean(root)
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// v2Candidates are the directories (relative to the unified mount) under
// which a v2 group is tried, in order: the explicit parent; else the parent
// of the caller's cgroup (a cgroup with processes cannot enable controllers
// for a child, its parent usually can), the caller's cgroup, and, unless
// rootless, the root.
func v2Candidates(own, parent string, rootless bool) []string {
	if parent != "" {
		return []string{path.Clean("/" + parent)}
	}
	own = path.Clean("/" + own)
	var c []string
	for _, p := range []string{path.Dir(own), own} {
		if !slices.Contains(c, p) {
			c = append(c, p)
		}
	}
	if !rootless && !slices.Contains(c, "/") {
		c = append(c, "/")
	}
	return c
}
