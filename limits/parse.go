package limits

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/airlock-sandbox/airlock/internal/mountinfo"
)

// The parsers of the kernel's cgroup files. They are hand-written because
// containerd/cgroups keeps its own unexported, and the watch must read three
// counters without the library's Stat, which reads every file of every
// controller. Each parser is bounded (maxFile) and fuzzed.

// maxFile bounds what is read from one kernel file.
const maxFile = 64 << 10

var errFormat = errors.New("unexpected format")

// parseInt parses a one-value file such as cpuacct.usage or pids.max;
// "max" reads as -1.
func parseInt(b []byte) (int64, error) {
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", errFormat, truncate(s))
	}
	return v, nil
}

// parseKV parses "key value" lines (memory.events, cpu.stat, pids.events,
// memory.oom_control, cgroup.events, memory.stat). Lines that do not have
// exactly two fields or whose value is not an integer are skipped; a
// repeated key keeps its first value. With keys, only those are kept: a
// step's counters read files of forty lines for one or two of them, and
// a map of every line was most of what a session step allocated.
func parseKV(b []byte, keys ...string) map[string]int64 {
	out := make(map[string]int64, len(keys))
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		k, v, ok := twoFields(line)
		if !ok {
			continue
		}
		key := ""
		for _, w := range keys {
			if string(k) == w { // compared, not allocated
				key = w
				break
			}
		}
		switch {
		case len(keys) == 0:
			key = string(k)
		case key == "":
			continue
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			continue
		}
		if _, dup := out[key]; !dup {
			out[key] = n
		}
	}
	return out
}

// twoFields splits line into its two fields separated by white space, as
// bytes.Fields would, without allocating; ok is false for any other count.
func twoFields(line []byte) (a, b []byte, ok bool) {
	var f [2][]byte
	n := 0
	for len(line) > 0 {
		i := bytes.IndexFunc(line, func(r rune) bool { return !unicode.IsSpace(r) })
		if i < 0 {
			break
		}
		line = line[i:]
		j := bytes.IndexFunc(line, unicode.IsSpace)
		if j < 0 {
			j = len(line)
		}
		if n == 2 {
			return nil, nil, false
		}
		f[n], line = line[:j], line[j:]
		n++
	}
	return f[0], f[1], n == 2
}

// procCgroup is /proc/<pid>/cgroup: the process's cgroup in each v1
// hierarchy (keyed by controller, "name=systemd" for named ones) and in
// the unified hierarchy.
type procCgroup struct {
	v1         map[string]string
	unified    string
	hasUnified bool
}

// parseProcCgroup parses /proc/<pid>/cgroup ("id:controllers:path" lines).
func parseProcCgroup(b []byte) (procCgroup, error) {
	pc := procCgroup{v1: make(map[string]string)}
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(make([]byte, 0, 4096), maxFile)
	for s.Scan() {
		line := s.Text()
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return procCgroup{}, fmt.Errorf("%w: cgroup line %q", errFormat, truncate(line))
		}
		if parts[1] == "" {
			pc.unified, pc.hasUnified = parts[2], true
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c != "" {
				pc.v1[c] = parts[2]
			}
		}
	}
	if err := s.Err(); err != nil {
		return procCgroup{}, fmt.Errorf("%w: %w", errFormat, err)
	}
	return pc, nil
}

// cgroupMount is one cgroup or cgroup2 mount from /proc/self/mountinfo.
type cgroupMount struct {
	// point is where it is mounted; root is the mount's root within the
	// hierarchy (not "/" inside a cgroup namespace or for a bind mount).
	point, root string
	v2          bool
	// controllers of a v1 mount, from its super options ("memory",
	// "cpu", "cpuacct", "name=systemd", ...).
	controllers []string
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a mountinfo file.
func parseMountinfo(b []byte) ([]cgroupMount, error) {
	all, err := mountinfo.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errFormat, err)
	}
	var out []cgroupMount
	for _, mi := range all {
		if mi.FSType != "cgroup" && mi.FSType != "cgroup2" {
			continue
		}
		m := cgroupMount{point: mi.Point, root: mi.Root, v2: mi.FSType == "cgroup2"}
		if !m.v2 {
			for o := range strings.SplitSeq(mi.SuperOptions, ",") {
				switch o {
				case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "clone_children", "xattr", "noprefix", "cpuset_v2_mode", "favordynmods":
				default:
					if !strings.HasPrefix(o, "release_agent=") {
						m.controllers = append(m.controllers, o)
					}
				}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
