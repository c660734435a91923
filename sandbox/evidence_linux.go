package sandbox

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/sandbox/evidence"
)

// Evidence snapshots, from the host, what the suspected-escape procedure
// keeps of the session into dir (evidence.Snapshot): its processes,
// mounts, namespaces, sockets and workspace. Call Freeze first, so that
// nothing changes while it reads.
func (ss *Session) Evidence(dir string) (evidence.Record, error) {
	ss.fdMu.Lock()
	defer ss.fdMu.Unlock()
	s := ss.sb
	if s.c.Closed() {
		return evidence.Record{Dir: dir}, fmt.Errorf("sandbox: evidence: %w", ErrSessionEnded)
	}
	ev, err := evidence.Snapshot(dir, s.cmd.Process.Pid, s.group.Dirs(), s.work, s.cfg.Caps.DiskWriteBytes)
	if err != nil {
		err = fmt.Errorf("sandbox: %w", err)
	}
	return ev, err
}
