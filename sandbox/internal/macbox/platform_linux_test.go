package macbox

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

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
		Procs: procs,
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

func procs() ([]seatbelt.Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	page := int64(os.Getpagesize())
	var out []seatbelt.Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's name, which may hold spaces.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 22 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		start, _ := strconv.ParseInt(f[19], 10, 64)
		rss, _ := strconv.ParseInt(f[21], 10, 64)
		out = append(out, seatbelt.Proc{Pid: pid, Ppid: ppid, Pgid: pgid, Start: start, Footprint: rss * page})
	}
	return out, nil
}

func mustProcs() []seatbelt.Proc {
	ps, _ := procs()
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
