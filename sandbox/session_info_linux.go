package sandbox

import (
	"errors"
	"path/filepath"
)

// Receipt names, per control, the mechanism that enforces it in the
// session, as Close's Teardown will: what each step's result reports.
func (ss *Session) Receipt() map[string]string {
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	r := ss.sb.fullReceipt()
	r["session"] = sessionReceipt
	return r
}

// SetFindings changes the host directory that Close copies /findings to
// ("" discards them): a session's holder learns where findings go only
// when it is stopped. It fails once Close has begun.
func (ss *Session) SetFindings(dir string) error {
	if dir != "" && !filepath.IsAbs(dir) {
		return errors.New("sandbox: findings directory must be an absolute path")
	}
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	if ss.closing {
		return ErrSessionEnded
	}
	ss.sb.cfg.Findings = dir
	return nil
}
