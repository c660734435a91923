package enforcer

import (
	"fmt"
	"path/filepath"
	"strings"
)

// checkWorkspace refuses a workspace that holds one of Options.Hide: the
// workspace is copied into the sandbox whole, so a store of approvals (its
// sealing key) or a holder's sockets inside it would be handed to the
// code the policy contains. Both sides are compared with their links
// resolved.
func (e *Enforcer) checkWorkspace(ws string) error {
	if ws == "" || len(e.opts.Hide) == 0 {
		return nil
	}
	root, err := realPath(ws)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	for _, h := range e.opts.Hide {
		p, err := realPath(h)
		if err != nil {
			continue // not there: nothing to copy
		}
		if p == root || strings.HasPrefix(p, root+string(filepath.Separator)) || root == "/" {
			return fmt.Errorf("workspace %s holds %s, which no sandbox may see: give a narrower workspace", ws, h)
		}
	}
	return nil
}

// realPath is p absolute, with every link resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}
