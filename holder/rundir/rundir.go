// Package rundir finds the private per-user directory where session
// holders listen (docs/sessions.md, "The holder"). It imports only the
// lower standard library (not path/filepath or strings, which Go
// initialises late), so that the quick client (package holder/quick) can use it from
// its early package initialiser.
//
// Another local user controls which names exist in /tmp: one that makes
// /tmp/airlock-UID first (a directory of theirs, a link) would be trusted
// with this user's sockets, or, refused, would stop every session
// command. So a directory is used only when it is the user's own, not a
// link, and closed to everyone else (Why), and /tmp/airlock-UID only
// when no one else made it: else the user's own state directory serves.
// The holder and its clients find the same directory from the same
// environment and the same files (Path).
package rundir

import (
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"
)

// Path is the runtime directory of uid, the first of:
//
//   - $XDG_RUNTIME_DIR/airlock, when XDG_RUNTIME_DIR is an absolute path
//     to uid's own directory that no one else may enter; on macOS, then
//     $TMPDIR/airlock likewise (launchd's per-user temporary directory,
//     /var/folders/…/T, is the user's own and 0700);
//   - Own, when it exists: once used, always used;
//   - Tmp, unless it is Taken (another user made it first);
//   - Own, when there is one;
//   - Tmp, which Why then refuses.
//
// It checks none of them, and makes none.
func Path(uid int) string {
	for _, v := range privateVars {
		if x := os.Getenv(v); x != "" && x[0] == '/' && Why(x, uid) == "" {
			return path.Join(x, "airlock")
		}
	}
	if own := Own(); own != "" {
		if _, err := os.Lstat(own); err == nil || Taken(uid) != "" {
			return own
		}
	}
	return Tmp(uid)
}

// Tmp is uid's runtime directory in /tmp: /tmp/airlock-UID.
func Tmp(uid int) string { return "/tmp/airlock-" + strconv.Itoa(uid) }

// Taken says why Tmp will not do when it exists and is not uid's own
// private directory (Why); "" when it does not exist or will do.
func Taken(uid int) string {
	if _, err := os.Lstat(Tmp(uid)); err != nil {
		return ""
	}
	return Why(Tmp(uid), uid)
}

// Own is the runtime directory in the user's own state directory, for
// when Tmp is another user's: $XDG_STATE_HOME/airlock/run, else
// $HOME/.local/state/airlock/run (a relative one ignored, as
// audit.StateDir does); "" when neither is set.
func Own() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && d[0] == '/' {
		return path.Join(d, "airlock", "run")
	}
	if h := os.Getenv("HOME"); h != "" && h[0] == '/' {
		return path.Join(h, ".local", "state", "airlock", "run")
	}
	return ""
}

// Why says why dir is not a directory (not a link to one) that uid owns
// and no one else may enter, as the end of a sentence naming it, with the
// fix; "" when it is. A dir that cannot be read says NotFound or its
// error instead.
func Why(dir string, uid int) string {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err.Error()
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok || int(st.Uid) != uid:
		owner := "another user"
		if ok {
			owner = "uid " + strconv.Itoa(int(st.Uid))
		}
		return "is " + owner + "'s, not yours: refusing it (set XDG_RUNTIME_DIR to a directory of yours that no one else may enter)"
	case fi.Mode()&fs.ModeSymlink != 0:
		return "is a symbolic link: refusing it (remove it)"
	case !fi.IsDir():
		return "is not a directory: refusing it (remove it)"
	case fi.Mode().Perm()&0o077 != 0:
		return "may be entered by other users (mode " + fi.Mode().Perm().String() + "): refusing it (chmod 700 it)"
	}
	return ""
}
