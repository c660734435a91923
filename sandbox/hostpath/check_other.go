//go:build !linux

package hostpath

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Checker checks host paths. Off Linux (where no sandbox runs) it checks
// a path's words and its real path, every symbolic link followed; the
// mount checks need Linux's mount table.
type Checker struct{}

// NewChecker returns a Checker.
func NewChecker() (*Checker, error) { return &Checker{}, nil }

// Check refuses p as a ReadOnly or ReadWrite entry: its words, then its
// real path. A path that does not exist is checked as far as it does.
func (c *Checker) Check(field, p string) error { return c.check(field, p, true) }

// CheckBind refuses host as a Bind's host path, with the refused trees
// only.
func (c *Checker) CheckBind(host string) error { return c.check("bind", host, false) }

func (c *Checker) check(field, p string, view bool) error {
	if err := checkWords(field, p, view); err != nil {
		return err
	}
	for at := p; ; at = path.Dir(at) {
		real, err := filepath.EvalSymlinks(at)
		if err == nil {
			real = path.Join(filepath.ToSlash(real), strings.TrimPrefix(p, at))
			if why := refused(real, view); why != "" && real != p {
				return fmt.Errorf("%s %q: refusing to bind it: its real path is %s (%s)", field, p, real, why)
			}
			return nil
		}
		if at == "/" {
			return fmt.Errorf("%s %q: %w", field, p, err)
		}
	}
}
