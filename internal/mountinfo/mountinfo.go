// Package mountinfo parses the kernel's mount table, /proc/PID/mountinfo
// (proc(5)), for every reader in airlock: the host path checks
// (sandbox/hostpath, in the sandbox's init too), the cgroup layout
// (limits), the doctor, the payloads and the tests' residue checks.
//
// The kernel writes the table, but its paths and sources are whatever a
// local user or the sandboxed code named a directory or a mount: fields
// are split on the single spaces the kernel writes (never on other white
// space, which it leaves as it is), its octal escapes are undone exactly,
// and a line without every field is refused. It imports only the lower
// standard library, so that the init may link it (initproc's doc).
package mountinfo

import (
	"fmt"
	"strconv"
	"strings"
)

// Mount is one line of the table: "id parent major:minor root point
// options [optional...] - fstype source superoptions".
type Mount struct {
	// ID and Parent are the mount's id and its parent's.
	ID, Parent uint64
	// Dev is the filesystem's "major:minor".
	Dev string
	// Root is the mount's root within its filesystem: a path, except for
	// a namespace file bound somewhere (`ip netns add` binds nsfs files
	// under /run/netns: "net:[4026532179]").
	Root string
	// Point is where it is mounted, an absolute path.
	Point string
	// Options are the mount's own options ("rw,nosuid,relatime").
	Options string
	// FSType is the filesystem's type ("ext4", "cgroup2").
	FSType string
	// Source is the filesystem's source ("/dev/vda1", "tmpfs").
	Source string
	// SuperOptions are the filesystem's options (a cgroup v1 mount's
	// controllers among them).
	SuperOptions string
}

// Parse parses a mount table, refusing it whole at its first malformed
// line.
func Parse(b []byte) ([]Mount, error) {
	var out []Mount
	for n, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		m, ok := parseLine(line)
		if !ok {
			return nil, fmt.Errorf("mountinfo: line %d: malformed: %q", n+1, line[:min(len(line), 80)])
		}
		out = append(out, m)
	}
	return out, nil
}

func parseLine(line string) (Mount, bool) {
	f := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+4 != len(f) {
		return Mount{}, false
	}
	id, err1 := strconv.ParseUint(f[0], 10, 64)
	parent, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || !strings.Contains(f[2], ":") || f[3] == "" || !strings.HasPrefix(f[4], "/") || f[sep+1] == "" {
		return Mount{}, false
	}
	return Mount{
		ID: id, Parent: parent, Dev: f[2], Root: unescape(f[3]), Point: unescape(f[4]), Options: f[5],
		FSType: unescape(f[sep+1]), Source: unescape(f[sep+2]), SuperOptions: unescape(f[sep+3]),
	}, true
}

// unescape undoes the kernel's octal escapes (\040 space, \011 tab, \012
// newline, \134 backslash).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
