package seatbelt

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// sZomb is a zombie's p_stat: dead, not reaped, nothing to kill.
const sZomb = 5

// UserProcs reads the processes of this effective user from kern.proc.
func UserProcs() ([]Proc, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Geteuid())
	if err != nil {
		return nil, fmt.Errorf("kern.proc.uid: %w", err)
	}
	out := make([]Proc, 0, len(kps))
	for _, kp := range kps {
		if kp.Proc.P_stat == sZomb {
			continue
		}
		start := kp.Proc.P_starttime.Sec*1_000_000 + int64(kp.Proc.P_starttime.Usec)
		out = append(out, Proc{Pid: int(kp.Proc.P_pid), Ppid: int(kp.Eproc.Ppid), Pgid: int(kp.Eproc.Pgid), Start: start})
	}
	return out, nil
}
