package initproc

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// resolveProgram finds the file a workspace program's path p names in
// tree (/workspace or /tmp, the sandbox's own tmpfs), as the init is
// about to run it: links are followed only while they stay in tree
// (RESOLVE_BENEATH: an absolute link, or one whose ".." climbs out, is
// refused), and the file must be a regular file with an execute bit. It
// returns the file's path, with no link in it, which the init then
// executes.
//
// Nothing can change the tree between this and the exec: it is the
// sandbox's own tmpfs, which no process outside the sandbox writes, and
// no process of the sandbox but the init runs while a step starts (the
// processes of the step before were killed and reaped). The file is run
// by that path rather than by its descriptor (execveat) because a script
// run by descriptor gets /dev/fd/N for its own name, which breaks
// scripts that find their files from $0 (gradlew, configure).
func resolveProgram(tree, p string) (string, error) {
	rel, ok := strings.CutPrefix(p, tree+"/")
	if !ok || tree != WorkspaceDir && tree != TmpDir {
		return "", fmt.Errorf("%s is not a path in %s or %s", p, WorkspaceDir, TmpDir)
	}
	dir, err := unix.Open(tree, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", tree, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
	switch {
	case errors.Is(err, unix.EXDEV):
		hint := ""
		if strings.HasPrefix(path.Base(p), "python") {
			hint = " (a virtual environment made with python3 -m venv --copies holds its interpreter)"
		}
		return "", fmt.Errorf("%s leads out of %s by a symbolic link (an absolute one, or one whose .. climbs out): a workspace program must be a file in its tree%s", p, tree, hint)
	case err != nil:
		return "", fmt.Errorf("%s: %w", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable regular file (mode %#o)", p, st.Mode)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", fmt.Errorf("%s: the path of the file it names: %w", p, err)
	}
	if !strings.HasPrefix(real, tree+"/") {
		return "", fmt.Errorf("%s names %s, outside %s", p, real, tree)
	}
	return real, nil
}

// programPath is the file the init runs for path: path itself, or, with
// a tree, the workspace program it names there (resolveProgram).
func programPath(tree, path string) (string, error) {
	if tree == "" {
		return path, nil
	}
	return resolveProgram(tree, path)
}
