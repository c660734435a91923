//go:build linux || darwin

package holder

import (
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// orphans follows the processes of a holder where the watchdog cannot be
// their subreaper (macOS): read from the process table while the holder
// lives, so that when it dies the processes it left (a step's, reparented
// to launchd) are still known by their pid and start time
// (seatbelt.Tree), and killed.
type orphans struct {
	tree  *seatbelt.Tree
	procs func() ([]seatbelt.Proc, error)
}

func newOrphans(holder int, procs func() ([]seatbelt.Proc, error)) *orphans {
	return &orphans{tree: seatbelt.NewTree(holder), procs: procs}
}

// read reads the process table once and returns the holder's processes
// in it.
func (o *orphans) read() []seatbelt.Proc {
	ps, err := o.procs()
	if err != nil {
		return nil
	}
	return o.tree.Update(ps)
}

// kill sends SIGKILL to every process of the dead holder's until none is
// left or d has passed, and returns those still alive then.
func (o *orphans) kill(d time.Duration) []int {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		left := o.read()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			pids := make([]int, len(left))
			for i, p := range left {
				pids[i] = p.Pid
			}
			return pids
		}
		for _, p := range left {
			syscall.Kill(p.Pid, syscall.SIGKILL)
		}
	}
}

// boxOf reports whether name is the name of a private directory on macOS
// of the holder pid's: airlock-ID-N (os.MkdirTemp's N is digits) for one
// of the sessions ids, not a session's whose id only begins with one and
// a dash; or, a pool holder's sandbox, airlock-pool-PID-… (its id has
// enforcer.PoolSandboxPrefix, and keeps it in its session).
func boxOf(name string, pid int, ids []string) bool {
	if strings.HasPrefix(name, "airlock-"+enforcer.PoolSandboxPrefix(pid)) {
		return true
	}
	for _, id := range ids {
		n, ok := strings.CutPrefix(name, "airlock-"+id+"-")
		if ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}
