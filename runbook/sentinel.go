package runbook

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// maxSentinelEntries bounds the entries one host snapshot records, so a
// huge workspace cannot make the check between steps slow; what is past
// the bound is not watched (the snapshot says so).
const maxSentinelEntries = 20000

// fileState is what a host snapshot records of one path: enough to see
// any write (content, metadata, replacement) without reading contents.
type fileState struct {
	Exists  bool   `json:"exists"`
	Mode    string `json:"mode,omitempty"`
	Size    int64  `json:"size,omitempty"`
	MtimeNs int64  `json:"mtimeNs,omitempty"`
	CtimeNs int64  `json:"ctimeNs,omitempty"`
	Ino     uint64 `json:"ino,omitempty"`
}

// hostSnapshot maps host paths to their state.
type hostSnapshot struct {
	Files     map[string]fileState `json:"files"`
	Truncated bool                 `json:"truncated,omitempty"`
}

// watchedTree is a host directory watched for writes, to a depth: 1
// watches its entries, 2 theirs too, and so on; 0 has no bound.
type watchedTree struct {
	Path  string
	Depth int
}

// snapshotHost records the state of every path in files and of the
// entries of each of trees (not following symbolic links), except the
// paths in skip and what is under them.
func snapshotHost(files []string, trees []watchedTree, skip []string) hostSnapshot {
	s := hostSnapshot{Files: map[string]fileState{}}
	for _, p := range files {
		s.Files[p] = stateOf(p)
	}
	for _, t := range trees {
		root := t.Path
		s.Files[root] = stateOf(root)
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == root {
				return nil
			}
			if t.Depth > 0 && d.IsDir() && strings.Count(p[len(root):], string(filepath.Separator)) >= t.Depth {
				s.Files[p] = stateOf(p)
				return fs.SkipDir
			}
			if slices.Contains(skip, p) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if len(s.Files) >= maxSentinelEntries {
				s.Truncated = true
				return fs.SkipAll
			}
			s.Files[p] = stateOf(p)
			return nil
		})
	}
	return s
}

func stateOf(p string) fileState {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileState{}
	}
	st := fileState{Exists: true, Mode: fi.Mode().String(), Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	st.CtimeNs, st.Ino = statExtra(fi)
	return st
}

// changes lists what differs between the snapshot before and after, in
// path order: "changed P", "created P", "removed P".
func (before hostSnapshot) changes(after hostSnapshot) []string {
	var out []string
	for p, b := range before.Files {
		a, ok := after.Files[p]
		switch {
		case !ok && after.Truncated:
			continue
		case !ok || b.Exists && !a.Exists:
			out = append(out, "removed "+p)
		case !b.Exists && a.Exists:
			out = append(out, "created "+p)
		case b != a:
			out = append(out, fmt.Sprintf("changed %s (size %d -> %d, mtime %d -> %d, ctime %d -> %d, inode %d -> %d)",
				p, b.Size, a.Size, b.MtimeNs, a.MtimeNs, b.CtimeNs, a.CtimeNs, b.Ino, a.Ino))
		}
	}
	for p, a := range after.Files {
		if _, ok := before.Files[p]; !ok && a.Exists && !before.Truncated {
			out = append(out, "created "+p)
		}
	}
	sort.Strings(out)
	return out
}

// defaultSentinels are host files that no run has any business changing:
// the account and privilege databases and the dynamic linker's preload
// list (the usual targets of a host takeover). airlock's own binary is
// added at launch.
var defaultSentinels = []string{
	"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/sudoers", "/etc/ld.so.preload",
	"/root/.ssh/authorized_keys", "/root/.bashrc",
}
