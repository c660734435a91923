package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// freezeState is how a session was frozen, so that Close can undo what
// would stop it from killing.
type freezeState struct {
	mechanism string
	file      string // the freezer file written, "" for SIGSTOP
	thawValue string
}

func (f *freezeState) thaw() error {
	if f.file == "" {
		return nil // SIGKILL ends stopped processes
	}
	if err := os.WriteFile(f.file, []byte(f.thawValue), 0); err != nil {
		return fmt.Errorf("sandbox: thaw %s: %w", f.file, err)
	}
	return nil
}

// Freeze stops every process of the session where it stands, for the
// suspected-escape procedure (issue 6): the cgroup v2 freezer
// (cgroup.freeze) of the session's own group where it has one, else its
// v1 freezer, else SIGSTOP to each process of its pid namespace (best
// effort, named so in the returned mechanism). A frozen session runs no
// more steps; Evidence may then read it, and Close kills it frozen.
// Only a cgroup named for this sandbox is ever frozen, never the caller's.
func (ss *Session) Freeze() (string, error) {
	if fz := ss.frozen.Load(); fz != nil {
		return fz.mechanism, nil
	}
	fz, err := freeze(ss.sb.cmd.Process.Pid, "airlock-sandbox-"+ss.sb.cfg.ID)
	if err != nil {
		return "", err
	}
	ss.frozen.Store(fz)
	return fz.mechanism, nil
}

// freeze freezes the group named group that holds pid.
func freeze(pid int, group string) (*freezeState, error) {
	dirs, err := groupDirs(pid, group)
	if err != nil {
		return nil, err
	}
	if d, ok := dirs["v2"]; ok {
		file := filepath.Join(d, "cgroup.freeze")
		if err := os.WriteFile(file, []byte("1"), 0); err == nil {
			if err := waitFrozen(func() bool { return cgroupFrozen(d) }); err != nil {
				return nil, err
			}
			return &freezeState{mechanism: "cgroup v2 " + file, file: file, thawValue: "0"}, nil
		}
	}
	if d, ok := dirs["freezer"]; ok {
		file := filepath.Join(d, "freezer.state")
		if err := os.WriteFile(file, []byte("FROZEN"), 0); err != nil {
			return nil, fmt.Errorf("sandbox: freeze %s: %w", file, err)
		}
		err := waitFrozen(func() bool {
			b, err := os.ReadFile(file)
			return err == nil && strings.TrimSpace(string(b)) == "FROZEN"
		})
		if err != nil {
			return nil, err
		}
		return &freezeState{mechanism: "cgroup v1 " + file, file: file, thawValue: "THAWED"}, nil
	}
	if err := stopNamespace(pid); err != nil {
		return nil, err
	}
	return &freezeState{mechanism: "SIGSTOP to every process of the pid namespace (no freezer cgroup of its own)"}, nil
}

func waitFrozen(done func() bool) error {
	deadline := time.Now().Add(5 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			return errors.New("sandbox: freeze: the group did not freeze within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// cgroupFrozen reads "frozen 1" from a v2 group's cgroup.events.
func cgroupFrozen(dir string) bool {
	lines, err := readLines(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	for _, l := range lines {
		if l == "frozen 1" {
			return true
		}
	}
	return false
}

// groupDirs finds pid's cgroup directories on the host ("v2" for the
// unified hierarchy, "freezer" for the v1 one) whose last element is
// group: the sandbox's own, never a parent's.
func groupDirs(pid int, group string) (map[string]string, error) {
	lines, err := readLines("/proc/" + itoa(pid) + "/cgroup")
	if err != nil {
		return nil, fmt.Errorf("sandbox: freeze: %w", err)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, fmt.Errorf("sandbox: freeze: %w", err)
	}
	dirs := map[string]string{}
	for _, l := range lines {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || filepath.Base(parts[2]) != group {
			continue
		}
		key := ""
		switch {
		case parts[0] == "0" && parts[1] == "":
			key = "v2"
		case strings.Contains(","+parts[1]+",", ",freezer,"):
			key = "freezer"
		default:
			continue
		}
		if m, ok := mounts[key]; ok {
			dirs[key] = filepath.Join(m, parts[2])
		}
	}
	return dirs, nil
}

// cgroupMounts maps "v2" and "freezer" to where this process sees those
// hierarchies mounted (their roots).
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint opts... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue
		}
		switch {
		case tail[0] == "cgroup2":
			out["v2"] = fields[4]
		case tail[0] == "cgroup" && strings.Contains(","+tail[2]+",", ",freezer,"):
			out["freezer"] = fields[4]
		}
	}
	return out, sc.Err()
}

// stopNamespace sends SIGSTOP to every process of pid's pid namespace,
// again and again until a pass finds none still running (a fork can race
// one pass, not a pass that finds everything stopped).
func stopNamespace(pid int) error {
	ns, err := os.Readlink("/proc/" + itoa(pid) + "/ns/pid")
	if err != nil {
		return fmt.Errorf("sandbox: freeze: %w", err)
	}
	for range 50 {
		running := 0
		for _, p := range namespacePids(ns) {
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

// namespacePids lists the host pids of the processes whose pid namespace
// is ns (a /proc/PID/ns/pid link).
func namespacePids(ns string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		p := atoi(e.Name())
		if p <= 0 {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns {
			pids = append(pids, p)
		}
	}
	return pids
}

// state is the one-letter state of a process ("R", "S", "T", ...).
func state(pid int) string {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
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
