package limits

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Detect reports the host's cgroup mode, the controllers airlock uses,
// whether this user can create groups with them, and where the caller
// sits. It only reads: it creates nothing. (New is the final word: the
// doctor can make and delete a group to show the exact receipt.)
func Detect() HostInfo {
	info := HostInfo{Mode: ModeNone, Euid: os.Geteuid()}
	l, err := hostLayout()
	if err != nil {
		info.Notes = append(info.Notes, err.Error())
		return info
	}
	return detect(l, info.Euid)
}

func detect(l layout, euid int) HostInfo {
	info := HostInfo{Mode: l.mode, Euid: euid, UnifiedMount: l.unified}
	rootless := euid != 0
	var v2cands []string
	if l.unified != "" {
		info.UnifiedPath = l.unifiedOwn
		info.CgroupKill = kernelAtLeast(5, 14)
		v2cands = v2Candidates(l.unifiedOwn, "", rootless)
	}
	for _, name := range []string{"memory", "pids", "cpu", "freezer"} {
		info.Controllers = append(info.Controllers, detectController(l, name, v2cands))
	}
	if rootless {
		for _, c := range info.Controllers {
			info.Delegated = info.Delegated || c.Usable
		}
		if !info.Delegated {
			info.Notes = append(info.Notes, "no cgroup is delegated to this user: caps fall back to rlimits and the wall clock (systemd: run under a user service with Delegate=yes, or as root)")
		}
	}
	if l.mode == ModeNone {
		info.Notes = append(info.Notes, "no cgroup hierarchy is mounted")
	}
	return info
}

// v1Files and v2Files name the file through which a group uses each
// controller; "cpu" is cpuacct on v1 and the core cpu.stat on v2.
var (
	v1Files = map[string]string{"memory": "memory.limit_in_bytes", "pids": "pids.max", "cpu": "cpuacct.usage", "freezer": "freezer.state"}
	v2Files = map[string]string{"memory": "memory.max", "pids": "pids.max", "cpu": "cpu.stat", "freezer": "cgroup.freeze"}
)

func detectController(l layout, name string, v2cands []string) Controller {
	c := Controller{Name: name}
	v1name := name
	if name == "cpu" {
		v1name = "cpuacct"
	}
	if mount, ok := l.v1[v1name]; ok {
		c.Version, c.File, c.Path = 1, v1Files[name], l.v1Own[v1name]
		dir := filepath.Join(mount, c.Path)
		if err := writable(dir); err != nil {
			c.Why = fmt.Sprintf("cannot create a group in %s: %v", dir, err)
		} else {
			c.Usable = true
		}
		return c
	}
	if l.unified == "" {
		c.Why = "not mounted"
		return c
	}
	c.Version, c.File, c.Path = 2, v2Files[name], l.unifiedOwn
	var whys []string
	for _, cand := range v2cands {
		dir := filepath.Join(l.unified, cand)
		if err := writable(dir); err != nil {
			whys = append(whys, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		// cpu.stat and cgroup.freeze are core files of every group.
		if name == "cpu" || name == "freezer" || v2Enabled(dir, name) {
			c.Usable = true
			return c
		}
		whys = append(whys, fmt.Sprintf("%s: %s not available to a child", dir, name))
	}
	c.Why = strings.Join(whys, "; ")
	if c.Why == "" {
		c.Why = "no candidate cgroup"
	}
	return c
}

// v2Enabled reports whether a child of dir would get controller: it is
// already in dir's subtree_control, or dir offers it and, not being the
// root, holds no process (a cgroup with processes cannot enable it).
func v2Enabled(dir, controller string) bool {
	if b, err := readBounded(filepath.Join(dir, "cgroup.subtree_control")); err == nil && slices.Contains(strings.Fields(string(b)), controller) {
		return true
	}
	b, err := readBounded(filepath.Join(dir, "cgroup.controllers"))
	if err != nil || !slices.Contains(strings.Fields(string(b)), controller) {
		return false
	}
	if !exists(dir, "cgroup.type") { // only the root lacks cgroup.type
		return true
	}
	pids, err := readPids(dir)
	return err == nil && len(pids) == 0
}

// writable reports whether this user may create a directory in dir.
func writable(dir string) error {
	return unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS)
}

// kernelAtLeast compares the running kernel's version.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var a, b int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &a, &b); err != nil {
		return false
	}
	return a > major || (a == major && b >= minor)
}
