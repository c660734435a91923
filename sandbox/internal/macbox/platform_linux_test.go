package macbox

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil/proctable"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// linuxPlatform is a box's platform on Linux, for the tests: no profile
// (Wrap runs the command as it is), the process table from /proc with
// the resident size as footprint.
func linuxPlatform() Platform {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return Platform{
		Wrap:  func(_ string, argv []string) []string { return argv },
		Procs: proctable.Procs,
		Footprint: func(pid int) int64 {
			for _, p := range mustProcs() {
				if p.Pid == pid {
					return p.Footprint
				}
			}
			return 0
		},
		Limits: func() seatbelt.HostLimits { return seatbelt.HostLimits{UserProcs: 0} },
		Self:   self,
	}
}

func mustProcs() []seatbelt.Proc {
	ps, _ := proctable.Procs()
	return ps
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z") && unix.Kill(pid, 0) == nil
}
