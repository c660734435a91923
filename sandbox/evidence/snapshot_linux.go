package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// Snapshot writes, from the host, what the suspected-escape procedure
// keeps of the sandbox whose init is pid, in the cgroup directories
// cgroups, with the workspace work (a descriptor of its /workspace, -1
// for none, copied up to limit bytes). Into dir (created 0700; it must
// not exist or be empty) it writes
//
//   - processes.json: every process of the sandbox's pid namespace and of
//     its cgroup, with parent, state, ids, command line, cgroup and
//     namespaces — a process in one but not the other is itself a signal;
//   - mounts.txt: the init's mountinfo;
//   - namespaces.txt: the init's namespace links;
//   - net/: the network namespace's interfaces, routes and sockets
//     (/proc/PID/net/{dev,route,ipv6_route,tcp,tcp6,udp,udp6,raw,raw6,unix,packet,netlink});
//   - workspace-mtimes.txt: type, mode, size and mtime of every entry
//     under /workspace, read by descriptor, nothing followed;
//   - workspace/: a copy of /workspace (directories and regular files,
//     as the findings copy makes them), kept when the sandbox goes.
//
// Freeze the sandbox first, so that nothing changes while it reads. What
// cannot be read is listed in Record.Errors and the rest is still
// written; the returned error is set only when dir itself cannot be made.
func Snapshot(dir string, pid int, cgroups limits.GroupDirs, work int, limit int64) (Record, error) {
	ev := Record{Dir: dir}
	if err := makeDir(dir); err != nil {
		return ev, err
	}
	proc := "/proc/" + strconv.Itoa(pid)
	note := func(err error) {
		if err != nil {
			ev.Errors = append(ev.Errors, err.Error())
		}
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			note(fmt.Errorf("write %s: %w", name, err))
			return
		}
		ev.Files = append(ev.Files, name)
	}
	procs, err := sandboxProcesses(pid, cgroups)
	note(err)
	b, _ := json.MarshalIndent(procs, "", "  ")
	write("processes.json", append(b, '\n'))
	if b, err := os.ReadFile(proc + "/mountinfo"); err == nil {
		write("mounts.txt", b)
	} else {
		note(fmt.Errorf("mounts: %w", err))
	}
	write("namespaces.txt", []byte(namespaceLinks(proc)))
	if err := os.Mkdir(filepath.Join(dir, "net"), 0o700); err != nil {
		note(fmt.Errorf("net: %w", err))
	} else {
		for _, n := range []string{"dev", "route", "ipv6_route", "tcp", "tcp6", "udp", "udp6", "raw", "raw6", "unix", "packet", "netlink"} {
			if b, err := os.ReadFile(proc + "/net/" + n); err == nil {
				write("net/"+n, b)
			} else if !os.IsNotExist(err) {
				note(fmt.Errorf("net/%s: %w", n, err))
			}
		}
	}
	if work >= 0 {
		var sb strings.Builder
		n := 0
		if err := listTree(work, "", 0, &sb, &n); errors.Is(err, errTooMany) {
			sb.WriteString("! too many entries\n")
		} else {
			note(err)
		}
		write("workspace-mtimes.txt", []byte(sb.String()))
		ev.WorkspaceSkipped, err = findings.CopyTree(work, filepath.Join(dir, "workspace"), limit)
		note(err)
		ev.Files = append(ev.Files, "workspace/")
	}
	return ev, nil
}

func makeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("evidence: %s is not empty", dir)
	}
	return nil
}

// processInfo is one process, as processes.json records it.
type processInfo struct {
	Pid        int               `json:"pid"`
	InPidNS    bool              `json:"inPidNamespace"`
	InCgroup   bool              `json:"inCgroup"`
	Status     map[string]string `json:"status,omitempty"`
	Cmdline    []string          `json:"cmdline,omitempty"`
	Cgroup     []string          `json:"cgroup,omitempty"`
	Namespaces map[string]string `json:"namespaces,omitempty"`
}

// sandboxProcesses lists the processes of init's pid namespace and of the
// group's cgroup directories, each marked with where it was found.
func sandboxProcesses(init int, dirs limits.GroupDirs) ([]processInfo, error) {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(init) + "/ns/pid")
	if err != nil {
		return nil, fmt.Errorf("processes: %w", err)
	}
	found := map[int]*processInfo{}
	var order []int
	add := func(pid int) *processInfo {
		if p, ok := found[pid]; ok {
			return p
		}
		p := &processInfo{Pid: pid}
		found[pid] = p
		order = append(order, pid)
		return p
	}
	for _, pid := range NamespacePids(ns) {
		add(pid).InPidNS = true
	}
	for _, d := range groupDirList(dirs) {
		lines, _ := initproc.ReadLines(filepath.Join(d, "cgroup.procs"))
		for _, l := range lines {
			if pid := initproc.Atoi(l); pid > 0 {
				add(pid).InCgroup = true
			}
		}
	}
	out := make([]processInfo, 0, len(order))
	for _, pid := range order {
		p := found[pid]
		pp := "/proc/" + strconv.Itoa(pid)
		p.Status = map[string]string{}
		if lines, err := initproc.ReadLines(pp + "/status"); err == nil {
			for _, l := range lines {
				k, v, _ := strings.Cut(l, ":")
				switch k {
				case "Name", "State", "PPid", "NSpid", "Uid", "Gid", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "Threads":
					p.Status[k] = strings.TrimSpace(v)
				}
			}
		}
		if b, err := os.ReadFile(pp + "/cmdline"); err == nil {
			p.Cmdline = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		p.Cgroup, _ = initproc.ReadLines(pp + "/cgroup")
		p.Namespaces = map[string]string{}
		for _, n := range []string{"pid", "mnt", "net", "user", "ipc", "uts", "cgroup"} {
			if l, err := os.Readlink(pp + "/ns/" + n); err == nil {
				p.Namespaces[n] = l
			}
		}
		out = append(out, *p)
	}
	return out, nil
}

// namespaceLinks lists a process's namespace links, one per line.
func namespaceLinks(proc string) string {
	var sb strings.Builder
	for _, n := range []string{"user", "pid", "mnt", "net", "ipc", "uts", "cgroup", "time"} {
		l, err := os.Readlink(proc + "/ns/" + n)
		if err != nil {
			l = "unreadable: " + err.Error()
		}
		fmt.Fprintf(&sb, "%s %s\n", n, l)
	}
	return sb.String()
}

// listTree writes one line per entry under the directory fd: type, mode,
// size, mtime and path. Nothing is followed; it is bounded like the
// copies (findings.MaxDepth; past findings.MaxEntries entries it ends with
// errTooMany).
func listTree(fd int, rel string, depth int, sb *strings.Builder, n *int) error {
	if depth > findings.MaxDepth {
		fmt.Fprintf(sb, "! %s nested too deep\n", display(rel))
		return nil
	}
	names, more, err := findings.ReadDirNames(fd, findings.MaxEntries-*n)
	if err != nil {
		return fmt.Errorf("workspace: read %s: %w", display(rel), err)
	}
	for _, name := range names {
		if *n++; *n > findings.MaxEntries {
			return errTooMany
		}
		r := path.Join(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			fmt.Fprintf(sb, "! %s %v\n", r, err)
			continue
		}
		mt := time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC().Format(time.RFC3339Nano)
		fmt.Fprintf(sb, "%s %04o %d %s %q\n", typeLetter(st.Mode), st.Mode&0o7777, st.Size, mt, r)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			sub, err := initproc.OpenBeneath(fd, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
			if err != nil {
				fmt.Fprintf(sb, "! %s %v\n", r, err)
				continue
			}
			err = listTree(sub, r, depth+1, sb, n)
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
	}
	if more {
		return errTooMany
	}
	return nil
}

// errTooMany ends listTree past findings.MaxEntries entries.
var errTooMany = errors.New("too many entries")

func typeLetter(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "d"
	case unix.S_IFREG:
		return "f"
	case unix.S_IFLNK:
		return "l"
	case unix.S_IFIFO:
		return "p"
	case unix.S_IFSOCK:
		return "s"
	}
	return "?"
}

// groupDirList lists the group's directories, the unified one first.
func groupDirList(d limits.GroupDirs) []string {
	var out []string
	if d.V2 != "" {
		out = append(out, d.V2)
	}
	for _, k := range slices.Sorted(maps.Keys(d.V1)) {
		if !slices.Contains(out, d.V1[k]) {
			out = append(out, d.V1[k])
		}
	}
	return out
}

// NamespacePids lists the host pids of the processes whose pid namespace
// is ns (a /proc/PID/ns/pid link).
func NamespacePids(ns string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		p := initproc.Atoi(e.Name())
		if p <= 0 {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns {
			pids = append(pids, p)
		}
	}
	return pids
}

// display is rel as a listing names it: "." for the top.
func display(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
