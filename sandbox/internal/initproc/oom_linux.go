package initproc

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// oomAdj is the init's /proc/self/oom_score_adj, open for writing, and
// the value it had. The OOM killer picks the process with the most memory
// in the group; a step that has just started can hold less than the init
// (the race detector's build of a test binary, say), and the init, killed
// in its place, would end the whole session. So every target and step is
// forked while the init's score is at its maximum (children inherit it),
// and the init's own is put back at once: an unprivileged process may
// raise its score and lower it again down to where it was. The file is
// opened before the init makes itself non-dumpable (which gives its /proc
// files to a user its namespace does not map) and before Landlock (which
// refuses writes under /proc).
type oomAdj struct {
	fd   int // -1 when unavailable: targets then start at the init's score
	orig string
}

// openOOMAdj opens the calling process's oom_score_adj and reads its
// value; on any error it returns an unavailable oomAdj.
func openOOMAdj() oomAdj {
	fd, err := unix.Open("/proc/self/oom_score_adj", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return oomAdj{fd: -1}
	}
	buf := make([]byte, 16)
	n, err := unix.Read(fd, buf)
	v := strings.TrimSpace(string(buf[:max(n, 0)]))
	if _, perr := strconv.Atoi(v); err != nil || perr != nil {
		unix.Close(fd)
		return oomAdj{fd: -1}
	}
	return oomAdj{fd: fd, orig: v}
}

// set writes v; errors are ignored (a best effort on top of the caps).
func (o oomAdj) set(v string) {
	if o.fd >= 0 {
		unix.Pwrite(o.fd, []byte(v), 0)
	}
}

// spawnVictim is spawn with t the OOM killer's first choice over the init.
func (s *initState) spawnVictim(t target) (int, error) {
	s.oom.set("1000")
	defer s.oom.set(s.oom.orig)
	return spawn(t)
}
