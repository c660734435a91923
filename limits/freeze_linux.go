package limits

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
)

// frozenState is the freezer file Freeze wrote and the value that undoes
// it.
type frozenState struct {
	dir, file, thaw string
}

// freeze writes the group's freezer file; Group.Freeze then waits, outside
// the lock, until frozen reports true. cgroup v2 first, as the sandbox's
// whole tree is in the group there from its clone.
func (s *sysGroup) freeze() (mechanism string, frozen func() (bool, error), err error) {
	if s.v2 != nil && s.v2.dir != "" {
		dir := s.v2.dir
		if writeFile(dir, "cgroup.freeze", "1") == nil {
			s.frozen = &frozenState{dir: dir, file: "cgroup.freeze", thaw: "0"}
			return "cgroup v2 " + filepath.Join(dir, "cgroup.freeze"), func() (bool, error) {
				kv, err := readKV(dir, "cgroup.events")
				return kv["frozen"] == 1, err
			}, nil
		}
	}
	if s.v1 != nil {
		if dir, ok := s.v1.dirs["freezer"]; ok {
			file := filepath.Join(dir, "freezer.state")
			if err := writeFile(dir, "freezer.state", "FROZEN"); err != nil {
				return "", nil, fmt.Errorf("limits: freeze %s: %w", file, err)
			}
			s.frozen = &frozenState{dir: dir, file: "freezer.state", thaw: "THAWED"}
			return "cgroup v1 " + file, func() (bool, error) {
				b, err := readBounded(file)
				return strings.TrimSpace(string(b)) == "FROZEN", err
			}, nil
		}
	}
	return "", nil, ErrNoFreezer
}

// thaw undoes freeze, if the group is frozen and still there.
func (s *sysGroup) thaw() error {
	f := s.frozen
	if f == nil {
		return nil
	}
	if err := writeFile(f.dir, f.file, f.thaw); err != nil {
		return fmt.Errorf("limits: thaw %s: %w", filepath.Join(f.dir, f.file), err)
	}
	s.frozen = nil
	return nil
}

// groupDirs lists the group's directories for Group.Dirs.
func (s *sysGroup) groupDirs() GroupDirs {
	var d GroupDirs
	if s.v2 != nil {
		d.V2 = s.v2.dir
	}
	if s.v1 != nil && len(s.v1.dirs) > 0 {
		d.V1 = maps.Clone(s.v1.dirs)
	}
	return d
}
