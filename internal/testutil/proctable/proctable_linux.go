// Package proctable reads the process table from /proc as macOS's watch
// reads kern.proc, for the tests of that watch on Linux. It is a package
// of its own, apart from testutil, because it imports sandbox/seatbelt,
// which limits' tests (users of testutil) sit under.
package proctable

import (
	"os"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// Procs reads the process table from /proc as macOS's watch reads
// kern.proc (seatbelt.UserProcs), for the tests of that watch on Linux:
// every process, with its resident size as footprint.
func Procs() ([]seatbelt.Proc, error) {
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
