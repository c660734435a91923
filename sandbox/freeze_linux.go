package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/evidence"
	"golang.org/x/sys/unix"
)

// freezeState is how a session was frozen, so that Close can undo what
// would stop it from killing.
type freezeState struct {
	mechanism string
	cgroup    bool // frozen by the group's freezer (limits.Group.Freeze), else SIGSTOP
}

// thaw undoes a cgroup freeze; SIGKILL ends stopped processes.
func (f *freezeState) thaw(g *limits.Group) error {
	if !f.cgroup {
		return nil
	}
	if err := g.Thaw(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// Freeze stops every process of the session where it stands, for the
// suspected-escape procedure (issue 6): the freezer of the session's own
// group (limits.Group.Freeze: cgroup v2 cgroup.freeze where it has one,
// else its v1 freezer), else SIGSTOP to each process of its pid namespace
// (best effort, named so in the returned mechanism). A frozen session
// runs no more steps; Evidence may then read it, and Close kills it
// frozen. Only the sandbox's own cgroup is ever frozen, never the
// caller's.
func (ss *Session) Freeze() (string, error) {
	if fz := ss.frozen.Load(); fz != nil {
		return fz.mechanism, nil
	}
	fz, err := freeze(ss.sb.group, ss.sb.cmd.Process.Pid)
	if err != nil {
		return "", err
	}
	ss.frozen.Store(fz)
	return fz.mechanism, nil
}

// freeze freezes g, whose init is pid, or failing a freezer of its own,
// stops pid's namespace.
func freeze(g *limits.Group, pid int) (*freezeState, error) {
	mech, err := g.Freeze()
	switch {
	case err == nil:
		return &freezeState{mechanism: mech, cgroup: true}, nil
	case !errors.Is(err, limits.ErrNoFreezer):
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := stopNamespace(pid); err != nil {
		return nil, err
	}
	return &freezeState{mechanism: "SIGSTOP to every process of the pid namespace (no freezer cgroup of its own)"}, nil
}

// stopNamespace sends SIGSTOP to every process of pid's pid namespace,
// again and again until a pass finds none still running (a fork can race
// one pass, not a pass that finds everything stopped).
func stopNamespace(pid int) error {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return fmt.Errorf("sandbox: freeze: %w", err)
	}
	for range 50 {
		running := 0
		for _, p := range evidence.NamespacePids(ns) {
			if state(p) != "T" {
				running++
				unix.Kill(p, unix.SIGSTOP)
			}
		}
		if running == 0 {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("sandbox: freeze: processes kept running after SIGSTOP")
}

// state is the one-letter state of a process ("R", "S", "T", ...).
func state(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}
