// Package rundir finds the private per-user directory where session
// holders listen (docs/sessions.md, "The holder"). It imports only the
// lower standard library (not path/filepath or strings, which Go
// initialises late), so that the quick client (package holder/quick) can use it from
// its early package initialiser.
package rundir

import (
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"
)

// Path is the runtime directory of uid: $XDG_RUNTIME_DIR/airlock when
// XDG_RUNTIME_DIR is an absolute path to uid's own directory that no one
// else may enter, else /tmp/airlock-UID. It checks neither.
func Path(uid int) string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && x[0] == '/' && Why(x, uid) == "" {
		return path.Join(x, "airlock")
	}
	return "/tmp/airlock-" + strconv.Itoa(uid)
}

// Why says why dir is not a directory (not a link to one) that uid owns
// and no one else may enter, as the end of a sentence naming it; "" when
// it is. A dir that cannot be read says NotFound or its error instead.
func Why(dir string, uid int) string {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err.Error()
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "is a symbolic link: refusing it (remove it)"
	case !fi.IsDir():
		return "is not a directory: refusing it (remove it)"
	case !ok || int(st.Uid) != uid:
		return "is owned by another user: refusing it (remove it, or set XDG_RUNTIME_DIR)"
	case fi.Mode().Perm()&0o077 != 0:
		return "may be entered by other users (mode " + fi.Mode().Perm().String() + "): refusing it (chmod 700 it)"
	}
	return ""
}
