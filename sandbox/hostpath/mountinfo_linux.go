package hostpath

import (
	"fmt"
	"strconv"
	"strings"
)

// mount is one line of /proc/self/mountinfo.
type mount struct {
	id     uint64
	dev    string // "major:minor" of the filesystem
	root   string // the mount's root within its filesystem
	point  string // where it is mounted
	fstype string
}

// parseMountinfo parses a mountinfo table (proc(5)): "id parent
// major:minor root point options [optional...] - fstype source super".
// A root is a path within the filesystem, except for a namespace file
// bound somewhere (`ip netns add` binds nsfs files under /run/netns:
// root "net:[4026532179]"), which is kept as it is.
// Written by hand: the fields needed are five, and the mount libraries
// (moby/sys/mountinfo) would add a package to the sandbox's init.
func parseMountinfo(b []byte) ([]mount, error) {
	var out []mount
	for n, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("hostpath: mount table line %d: malformed: %q", n+1, line)
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		id, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || sep < 0 || sep+1 >= len(f) || !strings.Contains(f[2], ":") || f[3] == "" || f[4][0] != '/' {
			return nil, fmt.Errorf("hostpath: mount table line %d: malformed: %q", n+1, line)
		}
		out = append(out, mount{id: id, dev: f[2], root: unescape(f[3]), point: unescape(f[4]), fstype: f[sep+1]})
	}
	return out, nil
}

// unescape undoes the kernel's octal escapes of space, tab, newline and
// backslash (\040, \011, \012, \134) in a mountinfo path.
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
