package sandbox

import (
	"errors"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/sandbox/findings"
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
// when it is stopped. The directory is made (or an empty one taken) now,
// under the rules of Start's (docs/sandbox.md, "Findings"): one that will
// not do is refused here, and the session's findings still go where they
// went before. It fails once Close has begun.
func (ss *Session) SetFindings(dir string) error {
	if dir != "" && !filepath.IsAbs(dir) {
		return errors.New("sandbox: findings directory must be an absolute path")
	}
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	if ss.closing {
		return ErrSessionEnded
	}
	var dst *findings.Dest
	if dir != "" {
		var err error
		if dst, err = openFindings(dir, ss.sb.cfg.ReadWrite); err != nil {
			return err
		}
	}
	if old := ss.sb.dst; old != nil {
		old.Discard()
	}
	ss.sb.dst, ss.sb.cfg.Findings = dst, dir
	return nil
}
