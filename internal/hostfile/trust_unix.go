//go:build unix

package hostfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Trusted checks that the file opened from path, with fstat's fi, is one
// that only the user uid (named who in errors: "you") or root could have
// written or put there, and returns its real path. The rule (docs/policy.md,
// "Where the policy comes from"; the policy file's is the caller's, the
// sandbox's small init's the airlock binary's owner): the file is owned by
// uid or root and is not group- or world-writable; its directory is owned
// by uid or root and is not group- or world-writable, sticky or not;
// every directory above it is owned by uid or root and is either not
// writable by others or sticky (like /tmp: others may add entries there,
// but cannot rename or remove uid's); and so is every symbolic link
// followed on the way, with the directories that hold it. The file's own
// properties are those of the opened file (fstat); the path is then
// walked link by link and must lead to that same file.
func Trusted(path string, fi fs.FileInfo, uid uint32, who string) (string, error) {
	o := owner{uid, who}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("cannot tell who owns it")
	}
	if err := o.owns(st, "it is"); err != nil {
		return "", err
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return "", fmt.Errorf("it is group- or world-writable (mode %04o): another user could change it (chmod go-w %s)", m, path)
	}
	real, err := walk(path, o)
	if err != nil {
		return "", err
	}
	if err := trustedDirs(filepath.Dir(real), o, true); err != nil {
		return "", err
	}
	if now, err := os.Lstat(real); err != nil || !os.SameFile(now, fi) {
		return "", errors.New("it was replaced while airlock read it")
	}
	return real, nil
}

// maxLinks is how many symbolic links walk follows, as the kernel does.
const maxLinks = 40

// walk resolves path component by component, as the kernel does, and
// returns its real path. Every symbolic link on the way must be owned by
// uid or root and sit in directories that trustedDirs accepts:
// otherwise another user could aim the name at another file.
func walk(path string, o owner) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	todo := strings.Split(abs, "/")
	cur := "/"
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("more than %d symbolic links on the way", maxLinks)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return "", fmt.Errorf("cannot tell who owns %s", next)
		}
		if err := o.owns(st, "the symbolic link "+next+" on the way is"); err != nil {
			return "", err
		}
		if err := trustedDirs(cur, o, false); err != nil {
			return "", fmt.Errorf("the symbolic link %s on the way: %w", next, err)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// trustedDirs checks dir, a real path, and every directory above it.
// strict is set when dir holds the file itself: it must then not
// be writable by others even if sticky.
func trustedDirs(dir string, o owner, strict bool) error {
	for ; ; dir, strict = filepath.Dir(dir), false {
		if err := trustedDir(dir, o, strict); err != nil {
			return err
		}
		if filepath.Dir(dir) == dir {
			return nil
		}
	}
}

func trustedDir(dir string, o owner, strict bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot tell who owns %s", dir)
	}
	if err := o.owns(st, "the directory "+dir+" is"); err != nil {
		return err
	}
	m := fi.Mode()
	switch {
	case m.Perm()&0o022 == 0:
		return nil
	case strict:
		return fmt.Errorf("its directory %s is group- or world-writable (mode %04o): another user could replace the file; "+
			"keep it in a directory only %s or root can write", dir, m.Perm(), o.who)
	case m&fs.ModeSticky == 0:
		return fmt.Errorf("the directory %s above it is group- or world-writable (mode %04o) and not sticky: "+
			"another user could replace what is under it", dir, m.Perm())
	}
	return nil
}

// owner is the user besides root whom Trusted trusts, and how its
// errors name them.
type owner struct {
	uid uint32
	who string
}

// owns refuses a file, link or directory that neither o nor root owns.
func (o owner) owns(st *syscall.Stat_t, what string) error {
	if st.Uid != o.uid && st.Uid != 0 {
		return fmt.Errorf("%s owned by uid %d, not by %s (uid %d) or root: another user could have written it", what, st.Uid, o.who, o.uid)
	}
	return nil
}
