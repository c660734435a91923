package hostpath

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// trees are refused with everything under them: the host's sockets
// (docker.sock, D-Bus, systemd's), its kernel interfaces and devices.
var trees = []string{"/proc", "/sys", "/dev", "/run", "/var/run"}

// exact are refused themselves, not what is below them: the host's root,
// its homes, its state and temporary directories, its boot files; on
// macOS its homes (/Users), its mounted volumes and /private, which holds
// /var, /tmp and /etc.
var exact = []string{"/", "/home", "/root", "/var", "/tmp", "/boot", "/Users", "/Volumes", "/private", "/private/var", "/private/tmp"}

// own are the directories the sandbox makes itself: no host path is shown
// at or under them by a view entry (a ReadOnly or ReadWrite path is bound
// at the same path inside).
var own = []string{"/tmp", "/workspace", "/findings", "/.airlock"}

// Why a path is refused: one fixed wording each.
const (
	whyExact = "it exposes the host's homes, sockets or state"
	whyTree  = "it exposes the host's kernel interfaces or sockets"
)

// CheckWords refuses p as a ReadOnly or ReadWrite entry on its words
// alone: what a caller checks before the host's own view is at hand (the
// sandbox's init then checks the tree it opens).
func CheckWords(field, p string) error { return checkWords(field, p, true) }

// CheckBindWords refuses host as a Bind's host path on its words alone.
func CheckBindWords(host string) error { return checkWords("bind", host, false) }

// checkWords refuses p on its words alone. view is true for a ReadOnly or
// ReadWrite entry (every rule), false for a Bind's host path (the trees).
func checkWords(field, p string, view bool) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("%s %q: want a clean absolute path", field, p)
	}
	if why := refused(p, view); why != "" {
		return fmt.Errorf("%s %q: refusing to bind it (%s)", field, p, why)
	}
	if view && under(p, own) {
		return fmt.Errorf("%s %q: the sandbox makes this directory itself", field, p)
	}
	return nil
}

// refused says why the host path p (clean and absolute) may not be
// shown, "" when it may.
func refused(p string, view bool) string {
	switch {
	case under(p, trees):
		return whyTree
	case view && slices.Contains(exact, p):
		return whyExact
	}
	return ""
}

// under reports whether p is one of dirs or below one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Under reports whether the clean absolute path p is at or under a
// refused tree (/proc, /sys, /dev, /run, /var/run).
func Under(p string) bool { return under(p, trees) }
