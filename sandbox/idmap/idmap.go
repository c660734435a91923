// Package idmap decides how a rootless sandbox is rid of its caller's
// supplementary groups (docs/sandbox.md, "Groups"). An unprivileged user
// namespace may not call setgroups(2), and the kernel goes on checking
// the groups it keeps against the host's files: a caller in group shadow
// would read /etc/shadow from inside. The groups can be dropped only when
// newgidmap(1) (Debian's uidmap package) maps the namespace's gids with a
// subordinate range the administrator gave the caller in /etc/subgid,
// which leaves setgroups allowed, as rootless podman does; otherwise the
// sandbox refuses to start.
package idmap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// Groups are the caller's supplementary groups and the means to drop
// them.
type Groups struct {
	// Extra are the caller's supplementary groups other than its primary
	// gid, which the sandbox maps to its own gid 65534.
	Extra []int
	// User is the caller's name (or uid), as /etc/subgid names it.
	User string
	// NewGIDMap is newgidmap's path, "" when it is not installed.
	NewGIDMap string
	// SubGID is the first gid of the caller's subordinate range; Range
	// says whether /etc/subgid gives the caller one.
	SubGID uint32
	Range  bool
}

// SubGIDFile is where the subordinate gid ranges are.
const SubGIDFile = "/etc/subgid"

// Inspect reads the calling process's groups and what this host offers
// to drop them.
func Inspect() (Groups, error) {
	var g Groups
	gids, err := os.Getgroups()
	if err != nil {
		return g, fmt.Errorf("idmap: read the supplementary groups: %w", err)
	}
	for _, id := range gids {
		if id != os.Getgid() && !slices.Contains(g.Extra, id) {
			g.Extra = append(g.Extra, id)
		}
	}
	uid := strconv.Itoa(os.Getuid())
	g.User = uid
	if u, err := user.LookupId(uid); err == nil {
		g.User = u.Username
	}
	if len(g.Extra) == 0 {
		return g, nil
	}
	g.NewGIDMap, _ = exec.LookPath("newgidmap")
	if b, err := os.ReadFile(SubGIDFile); err == nil {
		g.SubGID, g.Range = subRange(b, g.User, uid)
	}
	return g, nil
}

// CanDrop reports whether the groups can be dropped: newgidmap and a
// subordinate range are there. With no Extra groups there is nothing to
// drop and CanDrop is false.
func (g Groups) CanDrop() bool { return len(g.Extra) > 0 && g.NewGIDMap != "" && g.Range }

// ErrGroups is matched by Refusal's error.
var ErrGroups = errors.New("supplementary groups cannot be dropped")

// Refusal is why a rootless run with these groups is refused, with the
// ways out; nil when there are none to drop or they can be dropped.
func (g Groups) Refusal() error {
	if len(g.Extra) == 0 || g.CanDrop() {
		return nil
	}
	var missing []string
	if g.NewGIDMap == "" {
		missing = append(missing, "newgidmap is not installed (Debian: apt-get install uidmap)")
	}
	if !g.Range {
		missing = append(missing, fmt.Sprintf("%s gives %s no subordinate gid range (add a line such as %s:100000:65536)", SubGIDFile, g.User, g.User))
	}
	return fmt.Errorf("%w: this rootless run's caller is in supplementary groups %v, which an unprivileged user namespace keeps "+
		"(the kernel would grant their access to host files inside), and %s; run airlock with no supplementary groups "+
		"(setpriv --clear-groups --reuid=%d --regid=%d -- airlock ...), or install uidmap and give the user a range in %s",
		ErrGroups, g.Extra, strings.Join(missing, ", and "), os.Getuid(), os.Getgid(), SubGIDFile)
}

// subRange returns the start of the first range of /etc/subgid's content
// b for the user named name or numbered uid.
func subRange(b []byte, name, uid string) (uint32, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(f) != 3 || (f[0] != name && f[0] != uid) {
			continue
		}
		start, err1 := strconv.ParseUint(f[1], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil && count > 0 && start+count <= 1<<32-1 {
			return uint32(start), true
		}
	}
	return 0, false
}

// MapArgs are newgidmap's arguments for process pid: the caller's
// primary gid as gid inside, and one gid of the subordinate range as gid
// 0 (1 when inside is 0), which is what makes newgidmap leave setgroups
// allowed.
func (g Groups) MapArgs(pid, inside int) []string {
	sub := 0
	if inside == 0 {
		sub = 1
	}
	return []string{strconv.Itoa(pid), strconv.Itoa(inside), strconv.Itoa(os.Getgid()), "1",
		strconv.Itoa(sub), strconv.FormatUint(uint64(g.SubGID), 10), "1"}
}
