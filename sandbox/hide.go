package sandbox

import (
	"path"
	"path/filepath"
	"slices"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// HideFiles adds to Hide every path inside the sandbox at which one of
// the host files (or directories) would be seen, so that a file is
// hidden by what it is, however it was named: its real path (absolute,
// every symbolic link resolved), and the same file reached through each
// tree the sandbox shows (ReadOnly, or DefaultReadOnly when that is nil
// and there is no Root; ReadWrite; Binds; Root at "/"), which may name it
// by another path, through a symbolic link in the tree's own name. Set
// the trees first. A file that no tree holds adds only its real path,
// which then masks nothing; an empty name is skipped.
func (c *Config) HideFiles(files ...string) {
	type tree struct{ host, inside string }
	var trees []tree
	ro := c.ReadOnly
	if ro == nil && c.Root == "" {
		ro = DefaultReadOnly
	}
	for _, p := range append(slices.Clone(ro), c.ReadWrite...) {
		trees = append(trees, tree{p, path.Clean(p)})
	}
	for _, b := range c.Binds {
		if b.Host != initproc.SelfExe {
			trees = append(trees, tree{b.Host, b.Inside})
		}
	}
	if c.Root != "" {
		trees = append(trees, tree{c.Root, "/"})
	}
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
