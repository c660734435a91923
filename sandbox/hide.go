package sandbox

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// HideFiles adds to Hide every path inside the sandbox at which one of
// the host files (or directories) would be seen, so that a file is
// hidden by what it is, however it was named: its real path (absolute,
// every symbolic link resolved), and the same file reached through each
// tree the sandbox shows (ReadOnly, or defaultReadOnly when that is nil
// and there is no Root; ReadWrite; Binds; Root at "/"), which may name it
// by another path, through a symbolic link in the tree's own name. Set
// the trees first. A file that no tree holds adds only its real path,
// which then masks nothing; an empty name is skipped.
//
// Start then refuses a view that would reach a hidden file other than by
// its own path (checkPrivate).
func (c *Config) HideFiles(files ...string) {
	trees := c.viewTrees()
	for i := range trees {
		real, err := hostfile.Real(trees[i].host)
		if err != nil {
			real = ""
		}
		trees[i].host = real
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		real, err := hostfile.Real(f)
		if err != nil {
			continue
		}
		c.Hide = append(c.Hide, real)
		c.private = append(c.private, real)
		for _, t := range trees {
			if t.host == "" || !hostfile.Within(real, t.host) {
				continue
			}
			rel, err := filepath.Rel(t.host, real)
			if err == nil {
				c.Hide = append(c.Hide, path.Join(t.inside, filepath.ToSlash(rel)))
			}
		}
	}
	slices.Sort(c.Hide)
	c.Hide = slices.Compact(c.Hide)
}

// viewTree is a host tree the sandbox shows, where it shows it, and
// whether the sandbox may write it.
type viewTree struct {
	host, inside string
	writable     bool
}

// viewTrees are the trees c's view shows, in this order: ReadOnly (or
// defaultReadOnly when that is nil and there is no Root), ReadWrite,
// Binds but airlock's own binary, and Root at "/".
func (c *Config) viewTrees() []viewTree {
	ro := c.ReadOnly
	if ro == nil && c.Root == "" {
		ro = defaultReadOnly
	}
	var trees []viewTree
	for _, p := range ro {
		trees = append(trees, viewTree{p, path.Clean(p), false})
	}
	for _, p := range c.ReadWrite {
		trees = append(trees, viewTree{p, path.Clean(p), true})
	}
	for _, b := range c.Binds {
		if b.Host != initproc.SelfExe {
			trees = append(trees, viewTree{b.Host, b.Inside, false})
		}
	}
	if c.Root != "" {
		trees = append(trees, viewTree{c.Root, "/", false})
	}
	return trees
}

// checkPrivate refuses a view through which the sandbox could reach a
// file that HideFiles hid other than at its own path, where it is masked:
//
//   - a ReadWrite tree that holds it or the directory it is in: the
//     sandbox could rename that directory away and put its own file in
//     the place (a policy a rootless run's next call would trust: its
//     files are the caller's), or plant beside it what airlock writes
//     next (an audit log's checkpoint and runs directory);
//   - any tree that lies inside a hidden directory: a mask covers what a
//     tree holds, not a tree bound from within it.
//
// Both sides are compared by real path.
func checkPrivate(c Config) error {
	if len(c.private) == 0 {
		return nil
	}
	for _, t := range c.viewTrees() {
		real, err := hostfile.Real(t.host)
		if err != nil {
			continue
		}
		for _, h := range c.private {
			switch {
			case real != h && hostfile.Within(real, h):
				return fmt.Errorf("%s lies inside %s, which no sandbox may see: bind another tree", findings.Quote(t.host), findings.Quote(h))
			case t.writable && (hostfile.Within(h, real) || hostfile.Within(filepath.Dir(h), real)):
				return fmt.Errorf("readWrite %s holds %s or its directory, which no sandbox may write: the sandbox could replace it "+
					"or plant files beside it; bind a narrower tree, or keep the file elsewhere", findings.Quote(t.host), findings.Quote(h))
			}
		}
	}
	return nil
}
