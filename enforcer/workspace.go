package enforcer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
)

// checkWorkspace refuses a workspace that holds one of the files no
// sandbox may see (hidden: the policy, the audit log and what lies beside
// it, the signing key's directory, Options.Hide such as the approval
// store and the holders' sockets): the workspace is copied into the
// sandbox whole, so hiding them in its view would not keep them out.
// Both sides are compared with their links resolved. It returns the
// workspace's real path ("" for none).
func (e *Enforcer) checkWorkspace(ws string) (string, error) {
	if ws == "" {
		return "", nil
	}
	root, err := hostfile.Real(ws)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", ws, err)
	}
	for _, h := range e.hidden() {
		if h == "" {
			continue
		}
		if _, err := os.Lstat(h); errors.Is(err, fs.ErrNotExist) {
			continue // not there: nothing to copy
		}
		p, err := hostfile.Real(h)
		if err != nil {
			continue
		}
		if hostfile.Within(p, root) {
			return "", fmt.Errorf("workspace %s holds %s, which no sandbox may see: give a narrower workspace", ws, h)
		}
	}
	return root, nil
}
