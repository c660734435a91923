package limits

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// sysGroup is the Linux part of a Group: its cgroup directories, or,
// without any, the pidfds of the placed processes. Group.mu guards it.
type sysGroup struct {
	v1     *v1Group
	v2     *v2Group
	pidfds []int        // placed processes, when there is no cgroup
	owner  *owner       // the claim on the directories (see sweep_linux.go)
	frozen *frozenState // what Freeze wrote, until Thaw or Delete
}

// newGroup makes the group on the layout l (the host's when nil; tests
// pass a v1-only, v2-only or private-mount layout).
func newGroup(caps Caps, opts Options, l *layout) (*Group, error) {
	host := l == nil
	if host {
		hl, err := hostLayout()
		if err != nil {
			return nil, err
		}
		l = &hl
	}
	name := opts.Name
	if name == "" {
		name = randomName()
	}
	dir := "airlock-" + name
	rootless := opts.Rootless || os.Geteuid() != 0
	hostGroups := host && !rootless
	if hostGroups {
		SweepStale()
	}
	g := &Group{caps: caps, name: name}
	why := map[string]string{}

	if len(l.v1) > 0 {
		v1, err := newV1Group(*l, opts.Parent, dir, caps)
		if err != nil && !errors.Is(err, errNoPermission) {
			return nil, err
		}
		if err != nil {
			why[RequireCgroup] = err.Error()
		}
		g.sys.v1 = v1
	}
	if l.unified != "" {
		v1 := g.sys.v1
		wantLimits := v1 == nil || !v1.has("memory") || !v1.has("pids")
		cands := v2Candidates(l.unifiedOwn, opts.Parent, rootless)
		v2, reasons := newV2Group(l.unified, cands, dir, caps, wantLimits)
		g.sys.v2 = v2
		if v2 == nil && len(reasons) > 0 {
			why[RequireCgroup] = joinReasons(why[RequireCgroup], reasons)
		}
	}

	if hostGroups {
		if d := g.sys.dirs(); len(d) > 0 {
			o, err := claim(dir, d)
			if err != nil {
				_ = g.sys.remove()
				return nil, err
			}
			g.sys.owner = o
		}
	}
	g.provides, g.receipt = g.sys.describe(why)
	g.rlimits = buildRlimits(caps, g.provides, g.receipt)

	var missing []string
	for _, r := range opts.Require {
		if isRequireName(r) && !g.provides[r] && !slices.Contains(missing, r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		_ = g.sys.remove()
		e := &RequireError{Missing: missing, Why: map[string]string{}}
		for _, m := range missing {
			e.Why[m] = g.whyMissing(m, why)
		}
		return nil, e
	}
	return g, nil
}

func (s *sysGroup) place(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("limits: place: invalid pid %d", pid)
	}
	if s.v1 == nil && s.v2 == nil {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return fmt.Errorf("limits: place: pidfd_open %d: %w", pid, err)
		}
		s.pidfds = append(s.pidfds, fd)
		return nil
	}
	if s.v2 != nil {
		if err := s.v2.place(pid); err != nil {
			return err
		}
	}
	if s.v1 != nil {
		return s.v1.place(pid)
	}
	return nil
}

func (s *sysGroup) dirFD() (int, bool) {
	if s.v2 == nil || s.v2.fd < 0 {
		return -1, false
	}
	return s.v2.fd, true
}

func (s *sysGroup) counters() counters {
	var c counters
	if s.v1 != nil {
		s.v1.counters(&c)
	}
	if s.v2 != nil && s.v2.dir != "" {
		var c2 counters
		s.v2.counters(&c2)
		if !c.cpuKnown {
			c.cpu, c.cpuKnown = c2.cpu, c2.cpuKnown
		}
		c.oomKills = max(c.oomKills, c2.oomKills)
		c.pidsHits = max(c.pidsHits, c2.pidsHits)
	}
	return c
}

func (s *sysGroup) stats() (Stats, error) {
	c := s.counters()
	st := Stats{CPU: c.cpu, OOMKills: c.oomKills, TasksLimitHits: c.pidsHits}
	if s.v2 != nil && s.v2.dir != "" {
		s.v2.stats(&st)
	}
	if s.v1 != nil {
		s.v1.stats(&st)
	}
	return st, nil
}

// remove kills what is left, then deletes every directory and closes
// every handle. It is safe to call again. An empty group (the usual case:
// the caller has run KillAll) goes with one rmdir per directory, as the
// kernel refuses to remove a directory that holds a process (EBUSY); only
// then does remove kill and retry.
func (s *sysGroup) remove() error {
	var errs []error
	if !s.removeIfEmpty() {
		if err := s.killAll(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.v2 != nil {
		if err := s.v2.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.v1 != nil {
		if err := s.v1.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, fd := range s.pidfds {
		_ = unix.Close(fd)
	}
	s.pidfds = nil
	if len(errs) == 0 {
		s.owner.release()
		s.owner = nil
		s.frozen = nil
	}
	return errors.Join(errs...)
}

// removeIfEmpty tries one rmdir of each directory and reports whether
// none is left.
func (s *sysGroup) removeIfEmpty() bool {
	left := false
	if s.v2 != nil && s.v2.dir != "" {
		if unix.Rmdir(s.v2.dir) == nil {
			s.v2.dir = "" // v2.remove still closes the fd
		} else {
			left = true
		}
	}
	if s.v1 != nil {
		for name, dir := range s.v1.dirs {
			if unix.Rmdir(dir) == nil {
				delete(s.v1.dirs, name)
			} else {
				left = true
			}
		}
	}
	return !left
}

// dirs lists the group's cgroup directories (for tests and diagnostics).
func (s *sysGroup) dirs() []string {
	var out []string
	if s.v2 != nil && s.v2.dir != "" {
		out = append(out, s.v2.dir)
	}
	if s.v1 != nil {
		out = slices.AppendSeq(out, maps.Values(s.v1.dirs))
	}
	return out
}
