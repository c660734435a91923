package doctor

import (
	"fmt"
	"strconv"
)

// capSysResource is CAP_SYS_RESOURCE's bit in the capability masks.
const capSysResource = 24

// openFiles reports the open-files limit the sandbox can grant: the
// policy's openFiles cap cannot exceed the hard limit this process has.
func openFiles(p Probes) Control {
	c := Control{Name: ControlOpenFiles, Mechanism: "RLIMIT_NOFILE", Strength: Strong}
	soft, hard, err := p.NoFile()
	if err != nil {
		c.Strength, c.Mechanism = Missing, "none"
		c.Detail = fmt.Sprintf("reading RLIMIT_NOFILE failed: %v", err)
		return c
	}
	c.Mechanism = fmt.Sprintf("RLIMIT_NOFILE (hard limit %d)", hard)
	c.Detail = fmt.Sprintf("a policy's openFiles above %d cannot be granted; this process's soft limit is %d", hard, soft)
	st := p.status()
	if bnd, err := strconv.ParseUint(st["CapBnd"], 16, 64); err == nil && bnd&(1<<capSysResource) == 0 {
		c.Detail += "; not even root can raise the hard limit here (CAP_SYS_RESOURCE is not in the bounding set)"
	}
	return c
}
